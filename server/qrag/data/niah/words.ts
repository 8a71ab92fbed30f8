/**
 * Key vocabulary for the RULER NIAH needles. RULER draws `words` keys uniformly from
 * `sorted(set(f"{adj}-{noun}"))` over the wonderwords adjective and noun lists, which cannot be
 * downloaded here. These lists were written by hand for this project: common English words, lower
 * case a–z only, no proper names, none of the bAbI vocabulary (actors, places, objects, directions,
 * verbs) and none of the words of the NIAH template ("special", "magic", "hidden", …).
 * Keys look like `elated-lantern`.
 */
import type { Rng } from "../../util/rng.ts";

export const ADJECTIVES: readonly string[] = [
  "able", "absent", "active", "actual", "afraid", "agile", "alert", "alive", "ample", "ancient",
  "angry", "anxious", "aware", "awful", "basic", "bitter", "blank", "bold", "brave", "breezy",
  "brief", "bright", "brisk", "broad", "busy", "calm", "candid", "careful", "casual", "cheap",
  "cheerful", "chilly", "civil", "clean", "clever", "cloudy", "clumsy", "coarse", "cold", "common",
  "cozy", "crisp", "crooked", "cruel", "curious", "curly", "damp", "dark", "dear", "deep",
  "dense", "direct", "distant", "dizzy", "dry", "dull", "dusty", "eager", "early", "easy",
  "elated", "elegant", "empty", "endless", "equal", "exact", "faint", "fair", "famous", "fancy",
  "fast", "fierce", "final", "fine", "firm", "flat", "fond", "formal", "fragile", "free",
  "fresh", "friendly", "frozen", "full", "funny", "fuzzy", "gentle", "giant", "glad", "gloomy",
  "golden", "good", "graceful", "grand", "greedy", "green", "grumpy", "guilty", "handy", "happy",
  "hard", "harsh", "hasty", "healthy", "heavy", "helpful", "high", "hollow", "honest", "hot",
  "huge", "humble", "hungry", "icy", "idle", "immense", "jolly", "joyful", "juicy", "keen",
  "kind", "large", "late", "lazy", "lean", "light", "little", "lively", "lonely", "long",
  "loose", "loud", "lovely", "loyal", "lucky", "major", "mellow", "merry", "mild", "minor",
  "misty", "modern", "modest", "moist", "narrow", "nasty", "neat", "nervous", "new", "nice",
  "noble", "noisy", "normal", "odd", "old", "open", "orange", "plain", "pleasant", "polite",
  "poor", "precious", "pretty", "proud", "public", "pure", "purple", "quick", "quiet", "rapid",
  "rare", "raw", "ready", "real", "rich", "rigid", "ripe", "rough", "round", "royal",
  "rude", "rural", "rusty", "sad", "safe", "salty", "sandy", "scarce", "secret", "shallow",
  "sharp", "shiny", "short", "shy", "silent", "silky", "silly", "simple", "sleepy", "slim",
  "slow", "small", "smart", "smooth", "snowy", "soft", "solid", "sour", "spicy", "steady",
  "steep", "sticky", "stiff", "stormy", "strange", "strict", "strong", "sturdy", "subtle", "sudden",
  "sunny", "sweet", "swift", "tall", "tame", "tasty", "tender", "tense", "thick", "thin",
  "tidy", "tight", "tiny", "tired", "tough", "tricky", "true", "ugly", "upset", "urban",
  "usual", "vague", "vast", "violet", "vivid", "warm", "wary", "weak", "wealthy", "weary",
  "wet", "white", "wide", "wild", "windy", "wise", "witty", "wooden", "worried", "young",
];

export const NOUNS: readonly string[] = [
  "acorn", "airport", "album", "anchor", "angle", "ankle", "arch", "arrow", "artist", "atlas",
  "attic", "autumn", "avenue", "badge", "bakery", "balloon", "bamboo", "banana", "banner", "barn",
  "barrel", "basket", "battery", "beach", "beacon", "bean", "beard", "bell", "belt", "bench",
  "berry", "bicycle", "blanket", "blossom", "board", "boat", "bone", "bonnet", "book", "boot",
  "bottle", "boulder", "bowl", "bracelet", "branch", "bread", "brick", "bridge", "broom", "bubble",
  "bucket", "buckle", "bundle", "butter", "button", "cabin", "cable", "cactus", "cake", "camel",
  "camera", "canoe", "canvas", "canyon", "captain", "carpet", "carrot", "castle", "cattle", "cave",
  "cellar", "chair", "chalk", "channel", "cherry", "chimney", "circle", "cliff", "clock", "cloud",
  "coast", "coat", "coffee", "coin", "collar", "comet", "compass", "copper", "corner", "cottage",
  "cotton", "crane", "crayon", "creek", "cricket", "crown", "crystal", "cup", "curtain", "cushion",
  "daisy", "dancer", "desert", "diamond", "dinner", "doctor", "dolphin", "door", "dragon", "drawer",
  "dream", "drum", "eagle", "engine", "envelope", "environment", "eraser", "fabric", "falcon", "farm",
  "feather", "fence", "fern", "ferry", "field", "finger", "fire", "flag", "flame", "flower",
  "flute", "fog", "forest", "fork", "fountain", "fox", "frog", "fruit", "galaxy", "gate",
  "gem", "ghost", "glacier", "glass", "globe", "glove", "goat", "grape", "grass", "guitar",
  "hammer", "harbor", "harvest", "hat", "hawk", "helmet", "hill", "honey", "horse", "hotel",
  "house", "island", "jacket", "jar", "jewel", "journey", "jungle", "kettle", "kite", "ladder",
  "lake", "lamp", "lantern", "leaf", "lemon", "letter", "library", "lighthouse", "lion", "lizard",
  "lobster", "lock", "machine", "magnet", "mango", "map", "marble", "market", "meadow", "melody",
  "mirror", "monkey", "moon", "mountain", "muffin", "museum", "nest", "notebook", "ocean", "olive",
  "onion", "orchard", "otter", "owl", "paddle", "painter", "palace", "panda", "paper", "parcel",
  "parrot", "pasta", "path", "peach", "pearl", "pebble", "pencil", "pepper", "piano", "picture",
  "pillow", "pilot", "planet", "plate", "pond", "pony", "potato", "puzzle", "quilt", "rabbit",
  "radio", "rainbow", "raven", "ribbon", "river", "road", "robot", "rocket", "roof", "rope",
  "rose", "saddle", "sailor", "salad", "scarf", "school", "season", "shadow", "shell", "ship",
  "shirt", "shoe", "shore", "shovel", "signal", "singer", "skate", "sled", "snail", "snake",
  "soap", "sock", "soldier", "song", "spider", "spoon", "square", "squirrel", "stair", "statue",
  "stone", "storm", "stove", "straw", "stream", "street", "sugar", "summer", "sunset", "swan",
  "sweater", "sword", "teacher", "teapot", "temple", "tent", "thunder", "ticket", "tiger", "timber",
  "toast", "tomato", "tower", "town", "toy", "tractor", "trail", "train", "tree", "truck",
  "trumpet", "tulip", "tunnel", "turtle", "umbrella", "valley", "vase", "village", "violin", "volcano",
  "wagon", "wall", "wallet", "walnut", "wave", "whale", "wheel", "whistle", "willow", "window",
  "wing", "winter", "wizard", "wolf", "wool", "yacht", "zebra",
];

/** Number of distinct keys (adjectives × nouns). */
export const KEY_COUNT = ADJECTIVES.length * NOUNS.length;

/** The i-th key of the sorted key list (adjective-major, both lists are sorted). */
export function keyAt(i: number): string {
  if (!Number.isInteger(i) || i < 0 || i >= KEY_COUNT) throw new RangeError(`key index ${i} out of range 0..${KEY_COUNT - 1}`);
  return `${ADJECTIVES[Math.floor(i / NOUNS.length)]}-${NOUNS[i % NOUNS.length]}`;
}

/** A uniformly random "adj-noun" key (RULER's `random.choice(words)`). */
export function randomKey(rng: Rng): string {
  return keyAt(rng.int(KEY_COUNT));
}
