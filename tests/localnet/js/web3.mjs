// @solana/web3.js 1.99 against the localnet: every Connection method and subscription.
// web3.js checks each answer against its own schema (superstruct) and throws on a shape
// it does not expect; the checks here add the values and the commitment semantics.

import {
    AddressLookupTableProgram,
    Connection,
    Keypair,
    LAMPORTS_PER_SOL,
    PublicKey,
    SystemProgram,
    Transaction,
    TransactionMessage,
    VersionedTransaction,
} from '@solana/web3.js';

import { advance, assert, check, done, eq, landed, RENT, rejects, world } from './harness.mjs';

const consoleErrors = [];
const originalError = console.error;
console.error = (...args) => {
    consoleErrors.push(args.join(' '));
    originalError(...args);
};

const connection = new Connection(world.url, { wsEndpoint: world.wsUrl, commitment: 'confirmed' });
const payer = Keypair.fromSecretKey(Uint8Array.from(world.payer));
const TOKEN = new PublicKey('TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA');
const COMMITMENTS = ['processed', 'confirmed', 'finalized'];
const mint = new PublicKey(world.mint);
const holder = new PublicKey(world.holder);
const tokenAccount = new PublicKey(world.tokenAccount);

async function transfer(to, lamports) {
    const tx = new Transaction().add(
        SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports }),
    );
    const { blockhash } = await connection.getLatestBlockhash('processed');
    tx.recentBlockhash = blockhash;
    tx.feePayer = payer.publicKey;
    tx.sign(payer);
    const signature = await connection.sendRawTransaction(tx.serialize(), { preflightCommitment: 'processed' });
    await landed();
    return signature;
}

async function atEach(read) {
    const out = {};
    for (const commitment of COMMITMENTS) out[commitment] = await read(commitment);
    return out;
}

await check('getSlot and getBlockHeight at each commitment', async () => {
    const slots = await atEach(c => connection.getSlot(c));
    eq(slots.processed - slots.confirmed, 1, 'processed - confirmed');
    eq(slots.processed - slots.finalized, 32, 'processed - finalized');
    const heights = await atEach(c => connection.getBlockHeight(c));
    eq(heights, slots, 'block heights');
    const info = await atEach(async c => (await connection.getEpochInfo(c)).absoluteSlot);
    eq(info, slots, 'getEpochInfo');
});

await check('reads at each commitment see what that commitment has', async () => {
    const to = Keypair.generate().publicKey;
    await transfer(to, RENT + 12345);
    eq(await atEach(c => connection.getBalance(to, c)), { processed: RENT + 12345, confirmed: 0, finalized: 0 });
    const infos = await atEach(c => connection.getAccountInfo(to, c));
    assert(infos.processed.lamports === RENT + 12345 && infos.confirmed === null && infos.finalized === null);
    await advance(1);
    eq(await atEach(c => connection.getBalance(to, c)), { processed: RENT + 12345, confirmed: RENT + 12345, finalized: 0 });
    const counts = await atEach(c => connection.getTransactionCount(c));
    assert(counts.processed === counts.confirmed && counts.confirmed === counts.finalized + 1, JSON.stringify(counts));
    await advance(31);
    eq(await atEach(c => connection.getBalance(to, c)), { processed: RENT + 12345, confirmed: RENT + 12345, finalized: RENT + 12345 });
    const { context, value } = await connection.getBalanceAndContext(to, 'finalized');
    eq(value, RENT + 12345);
    eq(context.slot, (await connection.getSlot('processed')) - 32);
});

await check('the lookup-table pattern: createLookupTable({recentSlot: await getSlot()})', async () => {
    const [create, table] = AddressLookupTableProgram.createLookupTable({
        authority: payer.publicKey,
        payer: payer.publicKey,
        recentSlot: await connection.getSlot(),
    });
    const extend = AddressLookupTableProgram.extendLookupTable({
        lookupTable: table,
        authority: payer.publicKey,
        payer: payer.publicKey,
        addresses: [Keypair.generate().publicKey],
    });
    const { blockhash, lastValidBlockHeight } = await connection.getLatestBlockhash();
    const tx = new Transaction({ feePayer: payer.publicKey, blockhash, lastValidBlockHeight });
    tx.add(create, extend).sign(payer);
    const signature = await connection.sendRawTransaction(tx.serialize());
    await landed();
    const confirming = connection.confirmTransaction({ signature, blockhash, lastValidBlockHeight });
    await advance(1);
    const { value } = await confirming;
    eq(value.err, null);
    const lookup = await connection.getAddressLookupTable(table);
    eq(lookup.value.state.addresses.length, 1);
});

await check('accounts: AndContext, multiple, parsed, program accounts', async () => {
    const info = await connection.getAccountInfoAndContext(payer.publicKey, 'finalized');
    assert(info.value.owner.equals(SystemProgram.programId));
    const many = await connection.getMultipleAccountsInfo([payer.publicKey, Keypair.generate().publicKey]);
    assert(many[0].lamports > 0 && many[1] === null);
    const manyCtx = await connection.getMultipleAccountsInfoAndContext([payer.publicKey]);
    assert(manyCtx.context.slot > 0);
    const parsedMint = await connection.getParsedAccountInfo(mint);
    eq(parsedMint.value.data.parsed.info.supply, '1500000');
    eq(parsedMint.value.data.program, 'spl-token');
    const parsedMany = await connection.getMultipleParsedAccounts([tokenAccount, new PublicKey('SysvarC1ock11111111111111111111111111111111')]);
    eq(parsedMany.value[0].data.parsed.info.delegatedAmount.uiAmountString, '0.5');
    eq(parsedMany.value[1].data.parsed.type, 'clock');
    assert(parsedMany.value[1].lamports > 1, 'a sysvar is rent-exempt');
    const owned = await connection.getProgramAccounts(TOKEN, { filters: [{ dataSize: 165 }] });
    eq(owned.map(a => a.pubkey.toBase58()), [world.tokenAccount]);
    const parsedOwned = await connection.getParsedProgramAccounts(TOKEN, { filters: [{ memcmp: { offset: 0, bytes: world.mint } }] });
    eq(parsedOwned.length, 1);
    const loaderAccounts = await connection.getProgramAccounts(new PublicKey('BPFLoaderUpgradeab1e11111111111111111111111'), { dataSlice: { offset: 0, length: 0 } });
    assert(loaderAccounts.some(a => a.pubkey.toBase58() === world.programId), 'the preloaded program is listed');
    const nonce = await connection.getNonce(new PublicKey(world.nonce));
    assert(nonce.authorizedPubkey.equals(payer.publicKey));
    const nonceCtx = await connection.getNonceAndContext(new PublicKey(world.nonce));
    assert(nonceCtx.value.nonce.length > 30);
    const nonceParsed = await connection.getParsedAccountInfo(new PublicKey(world.nonce));
    eq(nonceParsed.value.data.program, 'nonce');
    const table = await connection.getParsedAccountInfo(new PublicKey(world.lookupTable));
    eq(table.value.data.parsed.info.addresses, world.lookedUp);
    eq(info.value.rentEpoch, 18446744073709552000, 'rentEpoch is u64::MAX');
});

await check('tokens', async () => {
    const supply = await connection.getTokenSupply(mint);
    eq(supply.value.uiAmountString, '1.5');
    const balance = await connection.getTokenAccountBalance(tokenAccount);
    eq([balance.value.amount, balance.value.decimals, balance.value.uiAmount], ['1500000', 6, 1.5]);
    const byOwner = await connection.getTokenAccountsByOwner(holder, { mint });
    eq(byOwner.value.map(a => a.pubkey.toBase58()), [world.tokenAccount]);
    const parsed = await connection.getParsedTokenAccountsByOwner(holder, { programId: TOKEN });
    eq(parsed.value[0].account.data.parsed.info.tokenAmount.amount, '1500000');
    const largest = await connection.getTokenLargestAccounts(mint);
    eq(largest.value.map(a => [a.address.toBase58(), a.amount]), [[world.tokenAccount, '1500000']]);
    await rejects(connection.getTokenSupply(payer.publicKey), -32602);
});

await check('cluster and economics', async () => {
    const version = await connection.getVersion();
    eq(version['solana-core'], '2.2.0');
    eq(await connection.getGenesisHash(), world.genesisHash);
    const nodes = await connection.getClusterNodes();
    eq(nodes.length, 1);
    const leader = await connection.getSlotLeader();
    eq(nodes[0].pubkey, leader);
    const slot = await connection.getSlot('processed');
    eq(await connection.getSlotLeaders(slot, 3), [0, 1, 2].map(() => new PublicKey(leader)));
    const schedule = await connection.getLeaderSchedule();
    eq(Object.keys(schedule), [leader]);
    const epochSchedule = await connection.getEpochSchedule();
    eq([epochSchedule.slotsPerEpoch, epochSchedule.warmup], [432000, false]);
    const votes = await connection.getVoteAccounts();
    eq(votes, { current: [], delinquent: [] });
    const supply = await connection.getSupply();
    assert(supply.value.total === supply.value.circulating && supply.value.total > 0);
    assert((await connection.getTotalSupply()) === supply.value.total);
    const largest = await connection.getLargestAccounts();
    assert(largest.value.length === 20);
    eq((await connection.getInflationGovernor()).initial, 0.08);
    eq((await connection.getInflationRate()).total, 0.08);
    eq(await connection.getInflationReward([payer.publicKey]), [null]);
    eq(await connection.getStakeMinimumDelegation(), { context: (await connection.getStakeMinimumDelegation()).context, value: LAMPORTS_PER_SOL });
    eq(await connection.getMinimumBalanceForRentExemption(0), 890880);
    assert(Array.isArray(await connection.getRecentPerformanceSamples(5)));
    const fees = await connection.getRecentPrioritizationFees();
    assert(fees.length <= 150 && fees.every(f => f.prioritizationFee === 0));
    const production = await connection.getBlockProduction();
    eq(Object.keys(production.value.byIdentity), [leader]);
});

await check('blockhashes and fees at each commitment', async () => {
    const hashes = await atEach(c => connection.getLatestBlockhash(c));
    const slots = await atEach(c => connection.getSlot(c));
    for (const c of COMMITMENTS) eq(hashes[c].lastValidBlockHeight, slots[c] + 150, c);
    const ctx = await connection.getLatestBlockhashAndContext('confirmed');
    eq(ctx.context.slot, slots.confirmed);
    assert((await connection.isBlockhashValid(hashes.processed.blockhash, { commitment: 'processed' })).value);
    assert(!(await connection.isBlockhashValid(hashes.processed.blockhash, { commitment: 'finalized' })).value,
        'the finalized bank has not seen the newest blockhash');
    const message = new TransactionMessage({ payerKey: payer.publicKey, recentBlockhash: hashes.processed.blockhash, instructions: [] }).compileToV0Message();
    eq((await connection.getFeeForMessage(message, 'processed')).value, 5000);
    eq((await connection.getFeeForMessage(message, 'finalized')).value, null);
});

await check('transactions: send, simulate, statuses, getTransaction at confirmed and finalized', async () => {
    const to = Keypair.generate().publicKey;
    const { blockhash, lastValidBlockHeight } = await connection.getLatestBlockhash('processed');
    const tx = new Transaction({ feePayer: payer.publicKey, blockhash, lastValidBlockHeight }).add(
        SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: RENT + 777 }),
    );
    const simulated = await connection.simulateTransaction(tx, [payer]);
    eq([simulated.value.err, simulated.value.unitsConsumed], [null, 150]);
    const signature = await connection.sendTransaction(tx, [payer], { preflightCommitment: 'processed' });
    await landed();
    eq((await connection.getSignatureStatus(signature)).value.confirmationStatus, 'processed');
    eq(await connection.getTransaction(signature, { commitment: 'confirmed' }), null);
    await advance(1);
    const statuses = await connection.getSignatureStatuses([signature], { searchTransactionHistory: true });
    eq(statuses.value[0].confirmationStatus, 'confirmed');
    const found = await connection.getTransaction(signature, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 });
    eq(found.meta.postBalances[1], RENT + 777);
    eq(await connection.getTransaction(signature, { commitment: 'finalized', maxSupportedTransactionVersion: 0 }), null);
    const parsed = await connection.getParsedTransaction(signature, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 });
    eq(parsed.transaction.message.instructions[0].parsed, { type: 'transfer', info: { source: payer.publicKey.toBase58(), destination: to.toBase58(), lamports: RENT + 777 } });
    const many = await connection.getParsedTransactions([signature, world.memo], { commitment: 'confirmed', maxSupportedTransactionVersion: 0 });
    eq(many[1].transaction.message.instructions[0].parsed, 'curta world');
    const raw = await connection.getTransactions([world.tokenSignature], { commitment: 'finalized', maxSupportedTransactionVersion: 0 });
    eq(raw[0].meta.postTokenBalances[0].uiTokenAmount.amount, '1500000');
    const tokenTx = await connection.getParsedTransaction(world.tokenSignature, { maxSupportedTransactionVersion: 0 });
    eq(tokenTx.transaction.message.instructions.map(i => i.parsed?.type), ['createAccount', 'initializeMint', 'create', 'mintTo', 'approve']);
    await advance(31);
    assert((await connection.getTransaction(signature, { commitment: 'finalized', maxSupportedTransactionVersion: 0 })) !== null);
    const airdropped = await connection.requestAirdrop(Keypair.generate().publicKey, LAMPORTS_PER_SOL);
    assert(typeof airdropped === 'string');
});

await check('preflight failure and versioned transactions', async () => {
    const { blockhash } = await connection.getLatestBlockhash('processed');
    const message = new TransactionMessage({
        payerKey: payer.publicKey,
        recentBlockhash: blockhash,
        instructions: [SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: Keypair.generate().publicKey, lamports: 10 ** 18 })],
    }).compileToV0Message();
    const tx = new VersionedTransaction(message);
    tx.sign([payer]);
    try {
        await connection.sendTransaction(tx, { preflightCommitment: 'processed' });
        throw new Error('expected a preflight failure');
    } catch (error) {
        assert(String(error.message).includes('custom program error: 0x1'), error.message);
        assert(Array.isArray(error.logs) && error.logs.length > 0, 'the logs come with it');
    }
});

await check('history: signatures for an address, blocks', async () => {
    const signatures = await connection.getSignaturesForAddress(payer.publicKey, { limit: 1000 });
    assert(signatures.length >= 5, `${signatures.length} signatures`);
    assert(signatures.some(s => s.memo === '[11] curta world'));
    const oldest = signatures[signatures.length - 1];
    eq(oldest.signature, world.airdrop);
    const before = await connection.getSignaturesForAddress(payer.publicKey, { before: signatures[0].signature, limit: 2 });
    eq(before.map(s => s.signature), signatures.slice(1, 3).map(s => s.signature));
    const finalizedOnly = await connection.getSignaturesForAddress(payer.publicKey, {}, 'finalized');
    assert(finalizedOnly.every(s => s.confirmationStatus === 'finalized'));
    const block = await connection.getBlock(world.slot, { maxSupportedTransactionVersion: 0 });
    assert(block.transactions.length >= 3 && block.blockHeight === world.slot);
    const parsedBlock = await connection.getParsedBlock(world.slot, { maxSupportedTransactionVersion: 0 });
    assert(parsedBlock.transactions[0].transaction.message.accountKeys[0].signer === true);
    const signaturesOnly = await connection.getBlockSignatures(world.slot);
    eq(signaturesOnly.signatures.slice(0, 1), [world.airdrop]);
    const none = await connection.getBlock(world.slot, { transactionDetails: 'none', rewards: false });
    assert(none.transactions === undefined);
    const blocks = await connection.getBlocks(0, world.slot + 1);
    eq(blocks, Array.from({ length: world.slot + 2 }, (_, i) => i));
    eq(await connection.getFirstAvailableBlock(), 0);
    eq(await connection.getMinimumLedgerSlot(), 0);
    assert((await connection.getBlockTime(world.slot)) > 1.7e9);
    await rejects(connection.getBlock((await connection.getSlot('processed')) + 100), -32004);
});

await check('deprecated helpers: served from current methods, or -32601 as on agave 2.x', async () => {
    const { blockhash } = await connection.getLatestBlockhash('processed');
    const tx = new Transaction({ feePayer: payer.publicKey, recentBlockhash: blockhash }).add(
        SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: Keypair.generate().publicKey, lamports: RENT }),
    );
    tx.sign(payer);
    const encoded = tx.serialize().toString('base64');
    assert(typeof (await connection.sendEncodedTransaction(encoded, { preflightCommitment: 'processed' })) === 'string');
    eq((await connection.getRecentBlockhashAndContext('finalized')).context.slot, await connection.getSlot('finalized'));
    const calls = {
        getConfirmedBlock: () => connection.getConfirmedBlock(world.slot),
        getConfirmedBlockSignatures: () => connection.getConfirmedBlockSignatures(world.slot),
        getConfirmedTransaction: () => connection.getConfirmedTransaction(world.airdrop),
        getParsedConfirmedTransaction: () => connection.getParsedConfirmedTransaction(world.airdrop),
        getParsedConfirmedTransactions: () => connection.getParsedConfirmedTransactions([world.airdrop]),
        getConfirmedSignaturesForAddress: () => connection.getConfirmedSignaturesForAddress(payer.publicKey, world.slot, world.slot),
        getConfirmedSignaturesForAddress2: () => connection.getConfirmedSignaturesForAddress2(payer.publicKey),
    };
    const outcomes = {};
    for (const [name, call] of Object.entries(calls)) {
        try {
            const value = await call();
            outcomes[name] = value === null ? 'null' : 'answer';
        } catch (error) {
            assert(String(error.message).includes('Method not found'), `${name}: ${error.message}`);
            outcomes[name] = '-32601';
        }
    }
    eq(outcomes.getConfirmedBlock, 'answer');
    eq(outcomes.getConfirmedTransaction, 'answer');
    eq(outcomes.getConfirmedSignaturesForAddress2, '-32601');
});

await check('methods agave 2.x removed answer -32601 here too', async () => {
    // web3.js 1.99 serves getRecentBlockhash from getLatestBlockhash itself.
    assert((await connection.getRecentBlockhash()).blockhash.length > 30);
    await rejects(connection.getStakeActivation(payer.publicKey), 'Method not found');
    await rejects(connection.getFeeCalculatorForBlockhash(world.blockhash), 'Method not found');
});

function waitFor(count, timeoutMs = 5000) {
    const seen = [];
    let resolve;
    const promise = new Promise((ok, fail) => {
        resolve = ok;
        setTimeout(() => fail(new Error(`${seen.length} of ${count} notifications`)), timeoutMs);
    });
    return {
        seen,
        push(value) {
            seen.push(value);
            if (seen.length >= count) resolve(seen);
        },
        promise,
    };
}

await check('subscriptions: account at each commitment, program, logs, signature, slot, root', async () => {
    const to = Keypair.generate().publicKey;
    const account = {};
    const ids = [];
    for (const c of COMMITMENTS) {
        account[c] = [];
        ids.push(connection.onAccountChange(to, info => account[c].push(info.lamports), { commitment: c }));
    }
    const program = waitFor(1);
    const programId = connection.onProgramAccountChange(SystemProgram.programId, info => {
        if (info.accountId.equals(to)) program.push(info);
    }, { commitment: 'processed', filters: [{ dataSize: 0 }] });
    const logs = waitFor(1);
    const logsId = connection.onLogs(to, entry => logs.push(entry), 'processed');
    const allLogs = [];
    const allLogsId = connection.onLogs('all', entry => allLogs.push(entry.signature), 'confirmed');
    const slots = [];
    const slotId = connection.onSlotChange(info => slots.push(info.slot));
    const roots = [];
    const rootId = connection.onRootChange(root => roots.push(root));
    const updates = [];
    const updateId = connection.onSlotUpdate(update => updates.push(update.type));
    await advance(1); // let every subscription be registered
    const signature = await transfer(to, RENT + 4242);
    const received = [];
    const signatureId = connection.onSignatureWithOptions(signature, (n, ctx) => received.push(n), { commitment: 'processed', enableReceivedNotification: false });
    const finalized = waitFor(1, 8000);
    connection.onSignature(signature, result => finalized.push(result), 'finalized');
    await logs.promise;
    eq(logs.seen[0].signature, signature);
    await program.promise;
    await advance(1);
    await advance(31);
    await finalized.promise;
    eq(finalized.seen[0].err, null);
    eq(account, { processed: [RENT + 4242], confirmed: [RENT + 4242], finalized: [RENT + 4242] });
    assert(allLogs.includes(signature), 'logsSubscribe("all") at confirmed');
    assert(slots.length >= 3 && roots.length >= 1, `slots ${slots.length}, roots ${roots.length}`);
    assert(updates.includes('frozen') && updates.includes('createdBank'), updates.join());
    assert(received.length === 1, 'signature notification (processed)');
    for (const id of ids) await connection.removeAccountChangeListener(id);
    await connection.removeProgramAccountChangeListener(programId);
    await connection.removeOnLogsListener(logsId);
    await connection.removeOnLogsListener(allLogsId);
    await connection.removeSlotChangeListener(slotId);
    await connection.removeRootChangeListener(rootId);
    await connection.removeSlotUpdateListener(updateId);
    await connection.removeSignatureListener(signatureId).catch(() => {});
});

await check('no console errors (no resubscribe loop, no refused ping)', async () => {
    eq(consoleErrors.slice(0, 5), []);
});

done();
