/** greedy-batch.ts episodeGroups: how an evaluation set is cut into groups run side by side. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { episodeGroups } from "../server/qrag/agent/greedy-batch.ts";

const sample = (id: string, chunks: number) => ({ id, chunks: { length: chunks } });
const ids = (groups: Iterable<{ id: string }[]>) => [...groups].map((g) => g.map((s) => s.id).join(""));

test("episode groups: consecutive samples, at most `episodes` a group and `candidates` rows, a larger sample alone, none empty", () => {
  const s = [sample("a", 10), sample("b", 10), sample("c", 10), sample("d", 50), sample("e", 200), sample("f", 5)];
  assert.deepEqual(ids(episodeGroups(s, 2, 100)), ["ab", "cd", "e", "f"]);
  assert.deepEqual(ids(episodeGroups(s, 10, 100)), ["abcd", "e", "f"]);
  assert.deepEqual(ids(episodeGroups(s, 10, 70)), ["abc", "d", "e", "f"], "a + b + c + d is 80 rows");
  assert.deepEqual(ids(episodeGroups([], 4, 100)), []);
});

test("episode groups draw the samples as the groups are taken: one sample past a full group at most", () => {
  let drawn = 0;
  function* source() {
    for (let i = 0; i < 10; i++) {
      drawn++;
      yield sample(String(i), 1);
    }
  }
  const groups = episodeGroups(source(), 3, 100);
  assert.deepEqual(groups.next().value?.map((x: { id: string }) => x.id), ["0", "1", "2"]);
  assert.equal(drawn, 4, "the fourth sample told the first group it was full");
  assert.deepEqual(ids(groups), ["345", "678", "9"]);
  assert.equal(drawn, 10);
});
