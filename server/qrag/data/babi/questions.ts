/**
 * Story → per-question samples, the way BabiLong's TaskDataset and Q-RAG split a bAbI story:
 * one sample per question whose facts are all statements before it (earlier questions dropped)
 * and whose support ids become 0-based positions in those facts.
 */
import type { BabiQA, BabiStory } from "./types.ts";

export function storyQuestions(story: BabiStory): BabiQA[] {
  const facts: string[] = [];
  const posOfId = new Map<number, number>();
  const out: BabiQA[] = [];
  for (const l of story.lines) {
    if (l.kind === "fact") {
      posOfId.set(l.id, facts.length);
      facts.push(l.text);
      continue;
    }
    const supportIdx = [...new Set(l.support)].map((id) => {
      const p = posOfId.get(id);
      if (p === undefined) throw new RangeError(`question ${l.id}: support id ${id} is not an earlier statement`);
      return p;
    });
    supportIdx.sort((a, b) => a - b);
    out.push({ facts: facts.slice(), question: l.text.trim(), answer: l.answer, supportIdx });
  }
  return out;
}
