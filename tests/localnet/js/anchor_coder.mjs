// node anchor_coder.mjs IDL CASES: Anchor's own TypeScript coder (@coral-xyz/anchor's
// BorshCoder, as its Program builds it) on our IDL. CASES is JSON {instructions: [[name,
// args]], accounts: [[name, hex]]}, values as tests/program/test_idl_anchor_ts.py writes
// them (integers as decimal strings, pubkeys base58, bytes hex, enums {variant: fields}).
// Prints one JSON line: {instructions: [hex], accounts: [fields]} with the same encoding.

import fs from 'node:fs';

import anchor from '@coral-xyz/anchor';

const { BN, BorshCoder, web3 } = anchor;
const idl = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const cases = JSON.parse(process.argv[3]);
const coder = new BorshCoder(idl);
const types = new Map(idl.types.map(t => [t.name, t.type]));

// JSON value -> what Anchor's coder takes, and back, walking the IDL type.
function toAnchor(type, value) {
    if (type === 'pubkey') return new web3.PublicKey(value);
    if (type === 'bytes') return Buffer.from(value, 'hex');
    if (type === 'bool' || type === 'string') return value;
    if (typeof type === 'string') return /64|128/.test(type) ? new BN(value) : Number(value);
    if (type.array) {
        const [inner] = type.array;
        return inner === 'u8' ? [...Buffer.from(value, 'hex')] : value.map(v => toAnchor(inner, v));
    }
    if (type.vec) return value.map(v => toAnchor(type.vec, v));
    if (type.option) return value === null ? null : toAnchor(type.option, value);
    return definedToAnchor(types.get(type.defined.name), value);
}

function definedToAnchor(def, value) {
    if (def.kind === 'struct') return fieldsTo(def.fields, value, toAnchor);
    const [[name, fields]] = Object.entries(value);
    const variant = def.variants.find(v => v.name === name);
    return { [name]: fieldsTo(variant.fields ?? [], fields, toAnchor) };
}

function fieldsTo(fields, value, convert) {
    return Object.fromEntries(fields.map(f => [f.name, convert(f.type, value[f.name])]));
}

function fromAnchor(type, value) {
    if (type === 'pubkey') return value.toBase58();
    if (type === 'bytes') return Buffer.from(value).toString('hex');
    if (type === 'bool' || type === 'string') return value;
    if (typeof type === 'string') return value.toString();
    if (type.array) {
        const [inner] = type.array;
        return inner === 'u8' ? Buffer.from(value).toString('hex') : value.map(v => fromAnchor(inner, v));
    }
    if (type.vec) return value.map(v => fromAnchor(type.vec, v));
    if (type.option) return value === null ? null : fromAnchor(type.option, value);
    const def = types.get(type.defined.name);
    if (def.kind === 'struct') return fieldsTo(def.fields, value, fromAnchor);
    const [[key, fields]] = Object.entries(value);
    // Anchor's enum decoder names the variant in camelCase; the IDL in PascalCase.
    const variant = def.variants.find(v => v.name.toLowerCase() === key.toLowerCase());
    return { [variant.name]: fieldsTo(variant.fields ?? [], fields, fromAnchor) };
}

const out = { instructions: [], accounts: [] };
for (const [name, args] of cases.instructions) {
    const ix = idl.instructions.find(i => i.name === name);
    out.instructions.push(coder.instruction.encode(name, fieldsTo(ix.args, args, toAnchor)).toString('hex'));
}
for (const [name, hex] of cases.accounts) {
    const decoded = coder.accounts.decode(name, Buffer.from(hex, 'hex'));
    out.accounts.push(fromAnchor({ defined: { name } }, decoded));
}
console.log(JSON.stringify(out));
