// node fees.mjs < CASES: the SDK's fee of each message (hex) and rent of each size; CASES is
// {"messages": [hex, ...], "sizes": [n, ...]}, the answer {"fees": [...], "signatures": [...],
// "rents": [...]} with lamports as strings (tests/sdk/test_sdk_fees.py).
import { readFileSync } from "node:fs";
import { rentExemptMinimum, signatureCount, transactionFee } from "../../sdk/js/dist/index.js";

const { messages, sizes } = JSON.parse(readFileSync(0, "utf8"));
const bytes = messages.map((hex) => new Uint8Array(Buffer.from(hex, "hex")));
console.log(JSON.stringify({
  fees: bytes.map((m) => transactionFee(m).toString()),
  signatures: bytes.map((m) => signatureCount(m)),
  rents: sizes.map((n) => rentExemptMinimum(n).toString()),
}));
