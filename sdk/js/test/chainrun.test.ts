// The pieces of a run on chain that need no cluster: what the checker says of each way a
// run account can differ from the run the page opened, the explorer's links, SOL amounts.
import assert from "node:assert/strict";
import { test } from "node:test";
import { explorerLink, RunChecker, RunMismatchError, RunState, sol, type ExpectedRun, type Run, type RunView } from "../src/index.js";

const expected: ExpectedRun = {
  address: "Run1111111111111111111111111111111111111111", model: "Mode1111111111111111111111111111111111111111",
  opener: "Open1111111111111111111111111111111111111111", capacity: 8, temperature: 0, topP: 0, seed: 0n,
  prompt: new TextEncoder().encode("hi"), promptIds: [1, 72, 105], generated: [7, 8, 9, 2],
};

function view(fields: Partial<Run>, tokens: number[]): RunView {
  const header = {
    model: expected.model, opener: expected.opener, capacity: 8, temperature: 0, topP: 0, seed: 0n, promptLength: 2,
    promptTokens: 3, tokenCount: tokens.length, state: RunState.Running, steps: 5n, ...fields,
  } as Run;
  return { header, tokens, slot: 1 };
}

test("each state shows the tokens new since the last, and the end", () => {
  const checker = new RunChecker(expected);
  assert.deepEqual(checker.check(view({ state: RunState.Tokenizing, tokenCount: 0 }, [])), { fresh: [], finished: false });
  assert.deepEqual(checker.check(view({}, [1, 72, 105, 7])), { fresh: [7], finished: false });
  // A node behind (an older step count) is skipped, not taken for a run that went back.
  assert.deepEqual(checker.check(view({ steps: 4n }, [1, 72, 105])), { fresh: [], finished: false });
  const done = view({ steps: 9n, state: RunState.Finished }, [1, 72, 105, 7, 8, 9, 2]);
  assert.deepEqual(checker.check(done), { fresh: [8, 9, 2], finished: true });
});

test("a run that differs is named with its address, step and what differs", () => {
  const cases: [Partial<Run>, number[], string][] = [
    [{ seed: 3n }, [1, 72, 105], "its seed is 3, this page opened it with 0"],
    [{ opener: expected.model as Run["opener"] }, [1, 72, 105], `its opener is ${expected.model}, this page opened it with ${expected.opener}`],
    [{ promptTokens: 2 }, [1, 72], "the chain tokenized the prompt into 2 tokens, this page into 3"],
    [{}, [1, 73, 105], "prompt token 2 is 73 on chain, this page encodes 72"],
    [{}, [1, 72, 105, 7, 5], "generated token 2 is 5 on chain, this page computes 8"],
    [{ state: RunState.Finished }, [1, 72, 105, 7], "the run finished after 1 generated tokens, this page computes 4"],
  ];
  for (const [fields, tokens, what] of cases)
    assert.throws(() => new RunChecker(expected).check(view(fields, tokens)), (e: Error) => {
      assert.ok(e instanceof RunMismatchError);
      assert.equal(e.message, `run ${expected.address} differs after step 5: ${what}`);
      return true;
    });
});

test("explorer links for the public clusters only", () => {
  assert.equal(explorerLink("solana:mainnet", "SIG"), "https://explorer.solana.com/tx/SIG");
  assert.equal(explorerLink("solana:devnet", "SIG"), "https://explorer.solana.com/tx/SIG?cluster=devnet");
  assert.equal(explorerLink("solana:testnet", "SIG"), "https://explorer.solana.com/tx/SIG?cluster=testnet");
  assert.equal(explorerLink("solana:localnet", "SIG"), null);
});

test("lamports read as SOL", () => {
  assert.equal(sol(0n), "0");
  assert.equal(sol(5_000n), "0.000005");
  assert.equal(sol(1_500_000_000n), "1.5");
  assert.equal(sol(2_000_000_000n), "2");
});
