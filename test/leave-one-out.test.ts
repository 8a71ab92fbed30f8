/**
 * Leave-one-out Q (server/qrag/agent/leave-one-out.ts) against the engine's own step path: for
 * every prefix of a pick list, each pick's value must equal the Q that a RetrievalEpisode which
 * took the other picks gives that chunk (state pieces, positions and rotary as in greedy.ts), on
 * host embeddings and on a tensor of them (the device path's gather).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as tf from "@tensorflow/tfjs";
import { resolveConfig } from "../server/qrag/config/config.ts";
import { QNetworks, embedStates } from "../server/qrag/agent/networks.ts";
import { Rng } from "../server/qrag/util/rng.ts";
import { buildSource } from "../server/qrag/data/sources.ts";
import { evalOptions } from "../server/qrag/training/train.ts";
import { embedSampleChunks, greedyEpisode } from "../server/qrag/agent/greedy.ts";
import { leaveOneOutQ } from "../server/qrag/agent/leave-one-out.ts";
import { RetrievalEpisode } from "../server/qrag/env/episode.ts";
import { scoreCandidates } from "../server/qrag/model/rotary.ts";
import { rotaryPositions } from "../server/qrag/agent/rotary-positions.ts";

// a transformer reads the state's pieces in order (bow does not), so both are checked
const ENCODERS = {
  bow: [] as string[],
  transformer: ["algo.encoder.type=transformer", "algo.encoder.layers=1", "algo.encoder.heads=2", "algo.encoder.max_len=128"],
};

for (const [name, overrides] of Object.entries(ENCODERS)) test(`leave-one-out Q equals the Q of an episode that took the other picks (${name}; host and tensor embeddings)`, async () => {
  const config = resolveConfig({ preset: "tiny", overrides });
  assert.equal(config.algo.encoder.type, name);
  const nets = new QNetworks(config.algo.encoder, new Rng(5));
  try {
    const opts = evalOptions(config, { neverTerminate: true });
    const sample = buildSource(config, "test", 60).sample(3);
    const emb = (await embedSampleChunks(nets, sample, opts.maxActionLength)) as Float32Array;
    const n = sample.chunks.length, D = nets.dim;
    // picks out of document order, so sorted state pieces and gap positions both matter
    const picks = [41, 7, 58, 0, 23];
    const loo = await leaveOneOutQ(nets, sample, opts, picks, 0.123, emb);
    assert.deepEqual(loo.map((r) => r.length), [1, 2, 3, 4, 5]);
    assert.equal(loo[0][0], 0.123, "row 0 is the first pick's recorded Q");
    const q1 = new Float32Array(n), q2 = new Float32Array(n);
    let distinct = 0;
    for (let k = 2; k <= picks.length; k++) {
      for (let j = 0; j < k; j++) {
        const ep = new RetrievalEpisode(sample, opts.episode);
        for (const o of picks.slice(0, k)) if (o !== picks[j]) ep.step(o);
        const s = embedStates(nets.state, [ep.stateTexts(opts.sortByIndex)], opts.maxInMemory, false);
        scoreCandidates(s.subarray(0, D), emb, rotaryPositions(ep), q1, q2);
        const want = q1[picks[j]] + q2[picks[j]];
        assert.ok(Math.abs(loo[k - 1][j] - want) < 1e-5, `k=${k} j=${j}: ${loo[k - 1][j]} vs ${want}`);
        if (Math.abs(loo[k - 1][j] - loo[k - 2]?.[j]) > 1e-6) distinct++;
      }
    }
    assert.ok(distinct > 0, "other picks change a pick's value");
    const t = tf.tensor2d(emb, [n, D]);
    const onTensor = await leaveOneOutQ(nets, sample, opts, picks, 0.123, t);
    t.dispose();
    for (let k = 0; k < picks.length; k++) for (let j = 0; j <= k; j++) assert.ok(Math.abs(onTensor[k][j] - loo[k][j]) < 1e-6);

    // greedy episodes record it when asked, row 0 being the first step's Q
    const rec = await greedyEpisode(nets, sample, { ...opts, leaveOneOut: true });
    assert.equal(rec.loo?.length, rec.steps.length);
    assert.equal(rec.loo?.[0][0], rec.steps[0].q);
    const again = await leaveOneOutQ(nets, sample, opts, rec.pred_idx, rec.steps[0].q, emb);
    assert.deepEqual(rec.loo, again);
    const plain = await greedyEpisode(nets, sample, { ...opts, leaveOneOut: false });
    assert.equal(plain.loo, undefined);
  } finally {
    nets.dispose();
  }
});
