/**
 * The reader's prompts. BabiLong and RULER NIAH follow the reference's reader
 * (`prompts_and_metrics/babilong.py`: `DEFAULT_PROMPTS`, taken there from BabiLong's official
 * prompts, and `TEMPLATE` = "{instruction}\n{examples}\n{post_prompt}\nContext: {context}\n\nQuestion:
 * {question}?", examples with "<example>" → "Example:" and "</example>" removed; docs:
 * qrag-method.md §5). The facts are joined by " " in document order (the reference re-sorts the kept
 * chunks by index). Two deliberate differences: the system prompt is only the part our spec quotes
 * ("Your are an AI assistant, …" there), and a question that already ends in "?" gets none added
 * (the reference appends one to bAbI's "Where is Mary? ", giving "? ?").
 * HotpotQA/MuSiQue: the reference's open-QA prompt text is not in our spec; ours asks for the
 * answer after "Final answer:", which is where the reference's scorer reads it.
 */
export type BabiTask = "qa1" | "qa2" | "qa3" | "qa4" | "qa5";
export type ReaderDataset =
  | { name: "babilong"; task: BabiTask }
  | { name: "niah"; multiValue?: boolean }
  | { name: "hotpotqa" }
  | { name: "musique" };

export interface ReaderPrompt { system: string; user: string }

interface TaskPrompt { instruction: string; examples: string; postPrompt: string }

const PROMPTS: Record<BabiTask | "niah" | "niahmv", TaskPrompt> = {
  niah: {
    instruction: "I will give you context with a special magic uuid hidden within the context" +
      "and a question. You need to answer the question based only on the information from the context. ",
    examples: "<example>\nOne of the special magic uuids for late-somebody is: a6cdae3c-6d13-4705-a79f-91ab1b4909b6. " +
      "What is the special magic uuid for late-somebody mentioned in the provided text?\n" +
      "The special magic uuid mentioned in the provided text is a6cdae3c-6d13-4705-a79f-91ab1b4909b6.\n</example>\n\n",
    postPrompt: "Always return your answer in the following format: " +
      "The special magic uuid mentioned in the provided text is ’uuid’. Do not write anything else after that.",
  },
  niahmv: {
    instruction: "I will give you context with special magic numbers hidden within the context" +
      "and a question. You need to answer the question based only on the information from the context. ",
    examples: "<example>\nOne of the special magic numbers for elated-environment is: 1155477. One of the special magic numbers for " +
      "elated-environment is: 1628578. One of the special magic numbers for elated-environment is: 6006190. One of the special " +
      "magic numbers for elated-environment is: 5856449.What are all the special magic numbers for elated-environment mentioned " +
      "in the provided text?\nThe magic numbers are 5856449,1628578,1155477,6006190.\n</example>",
    postPrompt: "Always return your answer in the following format: The magic numbers are n1,n2,n3,n4. Split the numbers by " +
      "coma(,) sumbol only without extra spases or and wird. Do not write anything else after that.",
  },
  qa1: {
    instruction: "I will give you context with the facts about positions of different persons hidden in some random text " +
      "and a question. You need to answer the question based only on the information from the facts. " +
      "If a person was in different locations, use the latest location to answer the question.",
    examples: "<example>\nCharlie went to the hallway. Judith come back to the kitchen. Charlie travelled to balcony. " +
      "Where is Charlie?\nAnswer: The most recent location of Charlie is balcony.\n</example>\n\n" +
      "<example>\nAlan moved to the garage. Charlie went to the beach. Alan went to the shop. Rouse " +
      "travelled to balcony. Where is Alan?\nAnswer: The most recent location of Alan is shop.\n</example>",
    postPrompt: "Always return your answer in the following format: " +
      "The most recent location of ’person’ is ’location’. Do not write anything else after that.",
  },
  qa2: {
    instruction: "I give you context with the facts about locations and actions of different persons " +
      "hidden in some random text and a question.You need to answer the question based only on the information from the facts.\n" +
      "If a person got an item in the first location and travelled to the second location the item is also in the second location. " +
      "If a person dropped an item in the first location and moved to the second location the item remains in the first location.",
    examples: "<example>\nCharlie went to the kitchen. Charlie got a bottle. Charlie moved to the balcony. " +
      "Where is the bottle?\nAnswer: The bottle is in the balcony.\n</example>\n" +
      "<example>\nAlan moved to the garage. Alan got a screw driver. Alan moved to the kitchen. Where " +
      "is the screw driver?\nAnswer: The screw driver is in the kitchen.\n</example>",
    postPrompt: "Always return your answer in the following format: The ’item’ is in ’location’. Do not write anything else after that.",
  },
  qa3: {
    instruction: "I give you context with the facts about locations and actions of different persons " +
      "hidden in some random text and a question. You need to answer the question based only on the information from the facts.\n" +
      "If a person got an item in the first location and travelled to the second location the item is also in the second location. " +
      "If a person dropped an item in the first location and moved to the second location the item remains in the first location.",
    examples: "<example>\nJohn journeyed to the bedroom. Mary grabbed the apple. Mary went back to the bathroom. " +
      "Daniel journeyed to the bedroom. Daniel moved to the garden. Mary travelled to the kitchen. " +
      "Where was the apple before the kitchen?\nAnswer: Before the kitchen the apple was in the bathroom.\n</example>\n" +
      "<example>\nJohn went back to the bedroom. John went back to the garden. John went back to the kitchen. " +
      "Sandra took the football. Sandra travelled to the garden. Sandra journeyed to the bedroom. " +
      "Where was the football before the bedroom?\nAnswer: Before the bedroom the football was in the garden.\n</example>",
    postPrompt: "Always return your answer in the following format: " +
      "Before the $location_1$ the $item$ was in the $location_2$. Do not write anything else after that.",
  },
  qa4: {
    instruction: "I will give you context with the facts about different people, their location and actions, hidden in " +
      "some random text and a question. You need to answer the question based only on the information from the facts.",
    examples: "<example>\nThe hallway is south of the kitchen. The bedroom is north of the kitchen. " +
      "What is the kitchen south of?\nAnswer: bedroom\n</example>\n" +
      "<example>\nThe hallway is east of the bathroom. The bedroom is west of the bathroom. " +
      "What is the bathroom east of?\nAnswer: bedroom\n</example>\n" +
      "<example>\nThe garden is west of the bedroom. The bedroom is west of the kitchen. What is west of the bedroom?\n" +
      "Answer: garden\n</example>",
    postPrompt: "Your answer should contain only one word - location.",
  },
  qa5: {
    instruction: "I will give you context with the facts about locations and their relations hidden in some random text " +
      "and a question. You need to answer the question based only on the information from the facts.",
    examples: "<example>\nMary picked up the apple there. Mary gave the apple to Fred. Mary moved to the bedroom. " +
      "Bill took the milk there. Who did Mary give the apple to?\nAnswer: Fred\n</example>\n" +
      "<example>\nJeff took the football there. Jeff passed the football to Fred. Jeff got the milk there. " +
      "Bill travelled to the bedroom. Who gave the football?\nAnswer: Jeff\n</example>\n" +
      "<example>\nFred picked up the apple there. Fred handed the apple to Bill. Bill journeyed to the bedroom. " +
      "Jeff went back to the garden. What did Fred give to Bill?\nAnswer: apple\n</example>",
    postPrompt: "Your answer should contain only one word. Do not write anything else after that. Do not explain your answer.",
  },
};

export const READER_SYSTEM = "Your are an AI assistant.";

const OPEN_QA_INSTRUCTION = "Answer the question using the documents below. Think briefly if needed, then end with " +
  "\"Final answer:\" followed by the answer only (a short phrase, no sentence).";

/** Answer-token budgets of the reference's reader: 32, NIAH 512 (open QA thinks: 4000 there, bounded here). */
export function answerTokenBudget(d: ReaderDataset): number {
  return d.name === "niah" ? 512 : d.name === "babilong" ? 32 : 256;
}

function question(q: string): string {
  const t = q.trim();
  return t.endsWith("?") ? t : `${t}?`;
}

/** `chunks` are the kept chunks in document order. */
export function readerPrompt(d: ReaderDataset, q: string, chunks: readonly string[]): ReaderPrompt {
  if (d.name === "hotpotqa" || d.name === "musique") {
    const docs = chunks.map((c, i) => `Document ${i + 1}: ${c.trim()}`).join("\n");
    return { system: READER_SYSTEM, user: `${OPEN_QA_INSTRUCTION}\n\n${docs}\n\nQuestion: ${question(q)}` };
  }
  const p = PROMPTS[d.name === "niah" ? (d.multiValue ? "niahmv" : "niah") : d.task];
  const examples = p.examples.replaceAll("<example>", "Example:").replaceAll("</example>", "");
  const context = chunks.map((c) => c.trim()).join(" ");
  const user = `${p.instruction}\n${examples}\n${p.postPrompt}\nContext: ${context}\n\nQuestion: ${question(q)}`.trim();
  return { system: READER_SYSTEM, user };
}
