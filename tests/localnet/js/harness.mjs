// The protocol between a client suite and pytest (tests/localnet/test_js_clients.py).
//
// argv[2] is the "world" pytest set up (URLs, a funded payer, a mint, ...). Each check
// prints one line `@@{"check": name, "ok": true|false, "error": ...}`; `advance(n)` prints
// `@@{"advance": n}` and waits for pytest to move the localnet's manual clock n slots and
// answer "ok" on stdin, so no check sleeps against slot durations. `done()` prints
// `@@{"done": true}`. With `world.blocks` the localnet runs `--blocks`: a transaction is
// processed only once the next slot begins, and `landed()` moves the clock there.

import readline from 'node:readline';

const input = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
export const world = JSON.parse(process.argv[2]);
let failures = 0;
/** The least a new account without data may be given: the runtime refuses a transfer that
 * leaves it below its rent-exempt minimum (InsufficientFundsForRent). */
export const RENT = 890_880;

function emit(value) {
    process.stdout.write(`@@${JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? `${v}n` : v))}\n`);
}

/** Move the localnet's clock `slots` slots on (pytest does it) and wait until it has. */
export async function advance(slots) {
    emit({ advance: slots });
    const { value } = await input.next();
    if (value !== 'ok') throw new Error(`advance(${slots}): pytest answered ${value}`);
    // The PubSub slot watcher looks at the clock every 50 ms.
    await sleep(120);
}

/** In block mode (world.blocks), move one slot on so that what was just sent is in a block:
 * from then on a check reads what it would read right after the send without blocks. */
export async function landed() {
    if (world.blocks) await advance(1);
}

export function sleep(ms) {
    return new Promise(resolve => setTimeout(resolve, ms));
}

/** Run one named check; a thrown error fails it (and only it). */
export async function check(name, body) {
    try {
        await body();
        emit({ check: name, ok: true });
    } catch (error) {
        failures += 1;
        emit({ check: name, ok: false, error: String(error?.stack ?? error).slice(0, 2000) });
    }
}

export function assert(condition, message) {
    if (!condition) throw new Error(message ?? 'assertion failed');
}

export function eq(actual, expected, message) {
    const a = JSON.stringify(actual, (_, v) => (typeof v === 'bigint' ? Number(v) : v));
    const e = JSON.stringify(expected, (_, v) => (typeof v === 'bigint' ? Number(v) : v));
    if (a !== e) throw new Error(`${message ?? 'not equal'}: got ${a}, expected ${e}`);
}

/** Expect `promise` to fail with JSON-RPC `code` (web3.js and kit carry it differently). */
export async function rejects(promise, code) {
    try {
        await promise;
    } catch (error) {
        const text = `${error?.message} ${error?.code} ${JSON.stringify(error?.context ?? {})}`;
        assert(text.includes(String(code)), `expected error ${code}, got: ${text}`);
        return;
    }
    throw new Error(`expected error ${code}, got success`);
}

const TYPES = {
    int: v => typeof v === 'number' || typeof v === 'bigint',
    str: v => typeof v === 'string',
    bool: v => typeof v === 'boolean',
    null: v => v === null,
    array: v => Array.isArray(v),
    object: v => typeof v === 'object' && v !== null && !Array.isArray(v),
    float: v => typeof v === 'number',
    any: () => true,
};

/**
 * Compare `value` with a documented shape: an object spec lists every key (no more, no
 * fewer; a key ending in `?` may be absent), a string names types joined by `|`
 * ("int|null"), `[spec]` is an array of spec.
 */
export function shape(value, spec, path = '$') {
    if (typeof spec === 'string') {
        const ok = spec.split('|').some(type => TYPES[type](value));
        if (!ok) throw new Error(`${path}: expected ${spec}, got ${show(value)}`);
        return;
    }
    if (Array.isArray(spec)) {
        assert(Array.isArray(value), `${path}: expected an array`);
        value.forEach((item, index) => shape(item, spec[0], `${path}[${index}]`));
        return;
    }
    if (!TYPES.object(value)) throw new Error(`${path}: expected an object, got ${show(value)}`);
    const keys = Object.keys(spec);
    for (const key of keys) {
        const name = key.replace(/\?$/, '');
        if (key.endsWith('?') && !(name in value)) continue;
        assert(name in value, `${path}: missing "${name}"`);
        shape(value[name], spec[key], `${path}.${name}`);
    }
    const allowed = new Set(keys.map(key => key.replace(/\?$/, '')));
    const extra = Object.keys(value).filter(key => !allowed.has(key));
    assert(extra.length === 0, `${path}: keys the documentation does not have: ${extra}`);
}

function show(value) {
    return String(JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? `${v}n` : v))).slice(0, 400);
}

export function done() {
    emit({ done: true, failures });
    process.exit(0);
}
