// @solana/kit 8 against the localnet: every RPC method and subscription it exposes,
// answers compared key by key with the shapes of Solana's JSON-RPC documentation
// (kit passes answers through, so a shape mismatch would otherwise go unnoticed).

import {
    AccountRole,
    address,
    appendTransactionMessageInstruction,
    createKeyPairSignerFromBytes,
    createSolanaRpc,
    createSolanaRpcSubscriptions_UNSTABLE,
    createTransactionMessage,
    generateKeyPairSigner,
    getBase64EncodedWireTransaction,
    getSignatureFromTransaction,
    pipe,
    setTransactionMessageFeePayerSigner,
    setTransactionMessageLifetimeUsingBlockhash,
    signTransactionMessageWithSigners,
} from '@solana/kit';

import { advance, assert, check, done, eq, landed, RENT, rejects, shape, world } from './harness.mjs';

const rpc = createSolanaRpc(world.url);
const subscriptions = createSolanaRpcSubscriptions_UNSTABLE(world.wsUrl);
const payer = await createKeyPairSignerFromBytes(Uint8Array.from(world.payer));
const COMMITMENTS = ['processed', 'confirmed', 'finalized'];
const SYSTEM = address('11111111111111111111111111111111');
const TOKEN = address('TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA');
const MEMO = address('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr');

const CONTEXT = { slot: 'int', apiVersion: 'str' };
const withContext = value => ({ context: CONTEXT, value });
const ACCOUNT = { data: 'array|str|object', executable: 'bool', lamports: 'int', owner: 'str', rentEpoch: 'int', space: 'int' };
const TOKEN_AMOUNT = { amount: 'str', decimals: 'int', uiAmount: 'float|null', uiAmountString: 'str' };
const STATUS = { slot: 'int', confirmations: 'int|null', err: 'any', status: 'object', confirmationStatus: 'str' };
const META = {
    err: 'any', status: 'object', fee: 'int', preBalances: 'array', postBalances: 'array',
    innerInstructions: 'array', logMessages: 'array', preTokenBalances: 'array',
    postTokenBalances: 'array', rewards: 'array', 'loadedAddresses?': { writable: 'array', readonly: 'array' },
    computeUnitsConsumed: 'int', costUnits: 'int', 'returnData?': 'object',
};

function transferInstruction(to, lamports) {
    const data = new Uint8Array(12);
    const view = new DataView(data.buffer);
    view.setUint32(0, 2, true);
    view.setBigUint64(4, BigInt(lamports), true);
    return {
        programAddress: SYSTEM,
        accounts: [
            { address: payer.address, role: AccountRole.WRITABLE_SIGNER, signer: payer },
            { address: to, role: AccountRole.WRITABLE },
        ],
        data,
    };
}

async function signed(instruction, commitment = 'processed') {
    const { value: blockhash } = await rpc.getLatestBlockhash({ commitment }).send();
    const message = pipe(
        createTransactionMessage({ version: 0 }),
        m => setTransactionMessageFeePayerSigner(payer, m),
        m => setTransactionMessageLifetimeUsingBlockhash(blockhash, m),
        m => appendTransactionMessageInstruction(instruction, m),
    );
    return signTransactionMessageWithSigners(message);
}

async function send(instruction) {
    const tx = await signed(instruction);
    await rpc.sendTransaction(getBase64EncodedWireTransaction(tx), { encoding: 'base64', preflightCommitment: 'processed' }).send();
    await landed();
    return getSignatureFromTransaction(tx);
}

async function atEach(read) {
    const out = {};
    for (const commitment of COMMITMENTS) out[commitment] = await read(commitment);
    return out;
}

await check('slots, heights, epoch info at each commitment, with their shapes', async () => {
    const slots = await atEach(c => rpc.getSlot({ commitment: c }).send());
    eq(slots.processed - slots.confirmed, 1n);
    eq(slots.processed - slots.finalized, 32n);
    eq(await atEach(c => rpc.getBlockHeight({ commitment: c }).send()), slots);
    for (const c of COMMITMENTS) {
        const info = await rpc.getEpochInfo({ commitment: c }).send();
        shape(info, { absoluteSlot: 'int', blockHeight: 'int', epoch: 'int', slotIndex: 'int', slotsInEpoch: 'int', transactionCount: 'int|null' });
        eq(info.absoluteSlot, slots[c]);
        eq(await rpc.getTransactionCount({ commitment: c }).send(), info.transactionCount);
    }
});

await check('accounts at each commitment', async () => {
    const to = (await generateKeyPairSigner()).address;
    await send(transferInstruction(to, RENT + 5555));
    const values = await atEach(async c => (await rpc.getAccountInfo(to, { commitment: c, encoding: 'base64' }).send()));
    shape(values.processed, withContext(ACCOUNT));
    eq([values.processed.value.lamports, values.confirmed.value, values.finalized.value], [BigInt(RENT + 5555), null, null]);
    await advance(1);
    eq(await atEach(async c => (await rpc.getBalance(to, { commitment: c }).send()).value), { processed: BigInt(RENT + 5555), confirmed: BigInt(RENT + 5555), finalized: 0n });
    await advance(31);
    const many = await rpc.getMultipleAccounts([to, payer.address], { commitment: 'finalized', encoding: 'base64' }).send();
    shape(many, withContext([ACCOUNT]));
    eq(many.value[0].lamports, BigInt(RENT + 5555));
    const parsed = await rpc.getAccountInfo(address(world.tokenAccount), { encoding: 'jsonParsed' }).send();
    shape(parsed.value.data, { program: 'str', parsed: { type: 'str', info: 'object' }, space: 'int' });
    shape(parsed.value.data.parsed.info, {
        isNative: 'bool', mint: 'str', owner: 'str', state: 'str', tokenAmount: TOKEN_AMOUNT,
        delegate: 'str', delegatedAmount: TOKEN_AMOUNT,
    });
    const program = await rpc.getProgramAccounts(TOKEN, { encoding: 'base64', withContext: true }).send();
    shape(program, withContext([{ pubkey: 'str', account: ACCOUNT }]));
    const plain = await rpc.getProgramAccounts(TOKEN, { encoding: 'jsonParsed', filters: [{ dataSize: 82n }] }).send();
    eq(plain.map(p => p.pubkey), [world.mint]);
    shape(plain[0].account.data.parsed.info, { mintAuthority: 'str|null', supply: 'str', decimals: 'int', isInitialized: 'bool', freezeAuthority: 'str|null' });
});

await check('tokens', async () => {
    const mint = address(world.mint);
    shape(await rpc.getTokenSupply(mint).send(), withContext(TOKEN_AMOUNT));
    shape(await rpc.getTokenAccountBalance(address(world.tokenAccount)).send(), withContext(TOKEN_AMOUNT));
    const largest = await rpc.getTokenLargestAccounts(mint).send();
    shape(largest, withContext([{ address: 'str', ...TOKEN_AMOUNT }]));
    const byOwner = await rpc.getTokenAccountsByOwner(address(world.holder), { mint }, { encoding: 'jsonParsed' }).send();
    shape(byOwner, withContext([{ pubkey: 'str', account: ACCOUNT }]));
    const byDelegate = await rpc.getTokenAccountsByDelegate(address(world.delegate), { programId: TOKEN }, { encoding: 'base64' }).send();
    eq(byDelegate.value.map(a => a.pubkey), [world.tokenAccount]);
    await rejects(rpc.getTokenAccountBalance(payer.address).send(), -32602);
});

await check('cluster and economics, with their shapes', async () => {
    shape(await rpc.getVersion().send(), { 'solana-core': 'str', 'feature-set': 'int' });
    eq(await rpc.getGenesisHash().send(), world.genesisHash);
    eq(await rpc.getHealth().send(), 'ok');
    shape(await rpc.getIdentity().send(), { identity: 'str' });
    shape(await rpc.getClusterNodes().send(), [{
        pubkey: 'str', gossip: 'str|null', tvu: 'str|null', tpu: 'str|null', tpuQuic: 'str|null',
        tpuForwards: 'str|null', tpuForwardsQuic: 'str|null', tpuVote: 'str|null',
        serveRepair: 'str|null', rpc: 'str|null', pubsub: 'str|null', version: 'str|null',
        featureSet: 'int|null', shredVersion: 'int|null',
    }]);
    shape(await rpc.getEpochSchedule().send(), { slotsPerEpoch: 'int', leaderScheduleSlotOffset: 'int', warmup: 'bool', firstNormalEpoch: 'int', firstNormalSlot: 'int' });
    const leader = await rpc.getSlotLeader().send();
    const slot = await rpc.getSlot({ commitment: 'processed' }).send();
    eq(await rpc.getSlotLeaders(slot, 2).send(), [leader, leader]);
    const schedule = await rpc.getLeaderSchedule().send();
    eq(Object.keys(schedule), [leader]);
    eq(await rpc.getLeaderSchedule(slot + 10n * 432000n).send(), null);
    shape(await rpc.getVoteAccounts().send(), { current: 'array', delinquent: 'array' });
    shape(await rpc.getSupply().send(), withContext({ total: 'int', circulating: 'int', nonCirculating: 'int', nonCirculatingAccounts: 'array' }));
    shape(await rpc.getLargestAccounts({ filter: 'circulating' }).send(), withContext([{ address: 'str', lamports: 'int' }]));
    shape(await rpc.getInflationGovernor().send(), { initial: 'float', terminal: 'float', taper: 'float', foundation: 'float', foundationTerm: 'float' });
    shape(await rpc.getInflationRate().send(), { total: 'float', validator: 'float', foundation: 'float', epoch: 'int' });
    eq(await rpc.getInflationReward([payer.address]).send(), [null]);
    shape(await rpc.getStakeMinimumDelegation().send(), withContext('int'));
    shape(await rpc.getRecentPerformanceSamples(3).send(), [{ slot: 'int', numTransactions: 'int', numNonVoteTransactions: 'int', numSlots: 'int', samplePeriodSecs: 'int' }]);
    const fees = await rpc.getRecentPrioritizationFees([payer.address]).send();
    shape(fees, [{ slot: 'int', prioritizationFee: 'int' }]);
    assert(fees.length === Math.min(150, Number(slot) + 1), `${fees.length} prioritization fee entries`);
    eq(fees.at(-1).slot, slot);
    assert((await rpc.getMaxRetransmitSlot().send()) >= slot);
    assert((await rpc.getMaxShredInsertSlot().send()) >= slot);
    eq(await rpc.getMinimumBalanceForRentExemption(0n).send(), 890880n);
    await rejects(rpc.getHighestSnapshotSlot().send(), -32008);
    shape(await rpc.getBlockProduction().send(), withContext({ byIdentity: 'object', range: { firstSlot: 'int', lastSlot: 'int' } }));
});

await check('blockhashes and fees at each commitment', async () => {
    for (const c of COMMITMENTS) {
        const latest = await rpc.getLatestBlockhash({ commitment: c }).send();
        shape(latest, withContext({ blockhash: 'str', lastValidBlockHeight: 'int' }));
        eq(latest.value.lastValidBlockHeight, latest.context.slot + 150n);
        shape(await rpc.isBlockhashValid(latest.value.blockhash, { commitment: c }).send(), withContext('bool'));
    }
    const tx = await signed(transferInstruction(payer.address, 1));
    const message = Buffer.from(tx.messageBytes).toString('base64');
    const fee = await rpc.getFeeForMessage(message, { commitment: 'processed' }).send();
    shape(fee, withContext('int|null'));
    eq(fee.value, 5000n);
    eq((await rpc.getFeeForMessage(message, { commitment: 'finalized' }).send()).value, null);
});

await check('methods newer than agave 2.2 answer -32601, as a 2.2 validator does', async () => {
    await rejects(rpc.getTransactionsForAddress(payer.address).send(), 'Method not found');
});

await check('transactions: simulate, send, statuses, getTransaction', async () => {
    const to = (await generateKeyPairSigner()).address;
    const tx = await signed(transferInstruction(to, RENT + 999));
    const wire = getBase64EncodedWireTransaction(tx);
    const simulated = await rpc.simulateTransaction(wire, { encoding: 'base64', commitment: 'processed', accounts: { addresses: [to], encoding: 'base64' } }).send();
    shape(simulated, withContext({
        err: 'null', logs: 'array', accounts: [ACCOUNT], unitsConsumed: 'int', returnData: 'null',
        'innerInstructions?': 'array|null', 'replacementBlockhash?': 'object|null',
        // What agave 4.2's simulation reports beside (solana-test-validator sends them all).
        'loadedAccountsDataSize?': 'int', 'fee?': 'int|null', 'preBalances?': 'array|null',
        'postBalances?': 'array|null', 'preTokenBalances?': 'array|null',
        'postTokenBalances?': 'array|null', 'loadedAddresses?': 'object|null',
    }));
    eq(simulated.value.fee, 5000n);
    const signature = await rpc.sendTransaction(wire, { encoding: 'base64', preflightCommitment: 'processed' }).send();
    await landed();
    const statuses = await rpc.getSignatureStatuses([signature]).send();
    shape(statuses, withContext([STATUS]));
    eq(statuses.value[0].confirmationStatus, 'processed');
    await rejects(rpc.getTransaction(signature, { commitment: 'processed' }).send(), -32602);
    await advance(1);
    for (const encoding of ['json', 'jsonParsed', 'base64', 'base58']) {
        const found = await rpc.getTransaction(signature, { commitment: 'confirmed', encoding, maxSupportedTransactionVersion: 0 }).send();
        shape(found, { slot: 'int', blockTime: 'int|null', transaction: 'object|array', meta: META, version: 'int|str', transactionIndex: 'int' });
        eq(found.version, 0n);
    }
    eq(await rpc.getTransaction(signature, { commitment: 'finalized', maxSupportedTransactionVersion: 0 }).send(), null);
    const airdrop = await rpc.requestAirdrop(to, 1000000n).send();
    assert(typeof airdrop === 'string');
});

await check('blocks and history at confirmed and finalized', async () => {
    const slot = BigInt(world.slot);
    for (const c of ['confirmed', 'finalized']) {
        const block = await rpc.getBlock(slot, { commitment: c, maxSupportedTransactionVersion: 0 }).send();
        shape(block, { blockHeight: 'int|null', blockTime: 'int|null', blockhash: 'str', parentSlot: 'int', previousBlockhash: 'str', transactions: 'array', rewards: 'array' });
        const signatures = await rpc.getBlock(slot, { commitment: c, transactionDetails: 'signatures', rewards: false }).send();
        shape(signatures, { blockHeight: 'int|null', blockTime: 'int|null', blockhash: 'str', parentSlot: 'int', previousBlockhash: 'str', signatures: 'array' });
        const accounts = await rpc.getBlock(slot, { commitment: c, transactionDetails: 'accounts', maxSupportedTransactionVersion: 0 }).send();
        shape(accounts.transactions[0], {
            transaction: { signatures: 'array', accountKeys: [{ pubkey: 'str', signer: 'bool', writable: 'bool', source: 'str' }] },
            meta: { err: 'any', status: 'object', fee: 'int', preBalances: 'array', postBalances: 'array', preTokenBalances: 'array', postTokenBalances: 'array' },
            version: 'int|str',
        });
    }
    await rejects(rpc.getBlock(slot, { commitment: 'processed' }).send(), -32602);
    const last = await rpc.getSlot({ commitment: 'finalized' }).send();
    eq((await rpc.getBlocks(0n, undefined, { commitment: 'finalized' }).send()).length, Number(last) + 1);
    eq(await rpc.getBlocksWithLimit(slot, 2n).send(), [slot, slot + 1n]);
    assert((await rpc.getBlockTime(slot).send()) > 1700000000n);
    shape(await rpc.getBlockCommitment(slot).send(), { commitment: 'array|null', totalStake: 'int' });
    eq(await rpc.getFirstAvailableBlock().send(), 0n);
    eq(await rpc.minimumLedgerSlot().send(), 0n);
    const history = await rpc.getSignaturesForAddress(payer.address, { limit: 3 }).send();
    shape(history, [{ signature: 'str', slot: 'int', err: 'any', memo: 'str|null', blockTime: 'int|null', confirmationStatus: 'str|null', transactionIndex: 'int' }]);
    eq(history.length, 3);
    const until = await rpc.getSignaturesForAddress(payer.address, { until: world.memo }).send();
    assert(!until.some(s => s.signature === world.memo || s.signature === world.airdrop));
});

await check('null config fields read as absent', async () => {
    const response = await fetch(world.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'getAccountInfo', params: [payer.address, { encoding: null, commitment: null, dataSlice: null }] }),
    });
    const answer = await response.json();
    assert(answer.result && answer.result.value.owner === SYSTEM, JSON.stringify(answer));
});

async function collect(pending, count, timeoutMs = 5000) {
    const abort = new AbortController();
    const iterator = (await pending.subscribe({ abortSignal: abort.signal }))[Symbol.asyncIterator]();
    const seen = [];
    const reading = (async () => {
        while (seen.length < count) {
            const { value, done: finished } = await iterator.next();
            if (finished) break;
            seen.push(value);
        }
    })();
    return {
        seen,
        async result() {
            const timer = new Promise(resolve => setTimeout(resolve, timeoutMs));
            await Promise.race([reading, timer]);
            abort.abort();
            return seen;
        },
        stop: () => abort.abort(),
    };
}

await check('subscriptions at each commitment, logs, program, signature, slot, root, slot updates', async () => {
    const target = (await generateKeyPairSigner()).address;
    const account = {};
    for (const c of COMMITMENTS) account[c] = await collect(subscriptions.accountNotifications(target, { commitment: c, encoding: 'base64' }), 1, 9000);
    const program = await collect(subscriptions.programNotifications(SYSTEM, { commitment: 'confirmed', encoding: 'base64', filters: [{ dataSize: 0n }] }), 1, 9000);
    const logs = await collect(subscriptions.logsNotifications({ mentions: [target] }, { commitment: 'processed' }), 1);
    const memoLogs = await collect(subscriptions.logsNotifications({ mentions: [MEMO] }, { commitment: 'finalized' }), 1, 9000);
    const slots = await collect(subscriptions.slotNotifications(), 2, 9000);
    const roots = await collect(subscriptions.rootNotifications(), 1, 9000);
    const updates = await collect(subscriptions.slotsUpdatesNotifications(), 3, 9000);
    await advance(1);
    const signature = await send(transferInstruction(target, RENT + 31337));
    const memoSignature = await send({ programAddress: MEMO, accounts: [], data: new TextEncoder().encode('kit memo') });
    const signatureNotification = await collect(subscriptions.signatureNotifications(signature, { commitment: 'confirmed' }), 1, 9000);
    shape((await logs.result())[0], withContext({ signature: 'str', err: 'null', logs: 'array' }));
    await advance(1);
    shape((await signatureNotification.result())[0], withContext({ err: 'null' }));
    const confirmedProgram = await program.result();
    shape(confirmedProgram[0], withContext({ pubkey: 'str', account: ACCOUNT }));
    await advance(31);
    for (const c of COMMITMENTS) {
        const [notification] = await account[c].result();
        shape(notification, withContext(ACCOUNT));
        eq(notification.value.lamports, BigInt(RENT + 31337), c);
    }
    eq((await memoLogs.result())[0].value.signature, memoSignature);
    const [first, second] = await slots.result();
    shape(first, { parent: 'int', root: 'int', slot: 'int' });
    eq(second.slot, first.slot + 1n);
    assert(typeof (await roots.result())[0] === 'bigint');
    const kinds = (await updates.result()).map(u => u.type);
    assert(kinds.includes('frozen') && kinds.includes('createdBank'), kinds.join());
});

await check('block and vote subscriptions are off, as on a default validator', async () => {
    const abort = new AbortController();
    await rejects(subscriptions.blockNotifications('all').subscribe({ abortSignal: abort.signal }), 'Method not found');
    await rejects(subscriptions.voteNotifications().subscribe({ abortSignal: abort.signal }), 'Method not found');
    abort.abort();
});

done();
