// The 2x2 cube as 24 stickers, with its 12 quarter-turn moves derived from 3D geometry (so they are
// correct by construction). Face and colour order follow RAGEN: U L F R B D, white orange green red blue yellow.
export const FACES = ['U', 'L', 'F', 'R', 'B', 'D'] as const;
export const FACE_NAMES = ['Up', 'Left', 'Front', 'Right', 'Back', 'Down'] as const;
/** Colour letters, indexed by the face that carries the colour when solved. */
export const COLORS = ['W', 'O', 'G', 'R', 'B', 'Y'] as const;
/** RAGEN's 12 actions in its order (its ids 1..12 are our indices 0..11). */
export const MOVE_NAMES = ['U', "U'", 'D', "D'", 'L', "L'", 'R', "R'", 'F', "F'", 'B', "B'"] as const;

type Vec = [number, number, number];

// Each face seen from outside: its outward normal, the direction "up" on the page and "right" on the page.
// U is seen from above with B at the top, D from below with F at the top, the side faces with U at the top.
const FRAMES: Record<(typeof FACES)[number], { n: Vec; up: Vec; right: Vec }> = {
  U: { n: [0, 1, 0], up: [0, 0, -1], right: [1, 0, 0] },
  L: { n: [-1, 0, 0], up: [0, 1, 0], right: [0, 0, 1] },
  F: { n: [0, 0, 1], up: [0, 1, 0], right: [1, 0, 0] },
  R: { n: [1, 0, 0], up: [0, 1, 0], right: [0, 0, -1] },
  B: { n: [0, 0, -1], up: [0, 1, 0], right: [-1, 0, 0] },
  D: { n: [0, -1, 0], up: [0, 0, 1], right: [1, 0, 0] },
};

const add = (a: Vec, b: Vec, s = 1): Vec => [a[0] + s * b[0], a[1] + s * b[1], a[2] + s * b[2]];
const dot = (a: Vec, b: Vec): number => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
const cross = (a: Vec, b: Vec): Vec => [
  a[1] * b[2] - a[2] * b[1],
  a[2] * b[0] - a[0] * b[2],
  a[0] * b[1] - a[1] * b[0],
];

/** Sticker i = face * 4 + row * 2 + col (row 0 on top, col 0 on the left, as the face is seen). */
interface Sticker {
  pos: Vec; // the cubie's corner, each coordinate +-1
  normal: Vec;
}

const STICKERS: Sticker[] = [];
for (const f of FACES) {
  const { n, up, right } = FRAMES[f];
  for (let row = 0; row < 2; row++) {
    for (let col = 0; col < 2; col++) {
      STICKERS.push({ pos: add(add(n, up, row === 0 ? 1 : -1), right, col === 0 ? -1 : 1), normal: n });
    }
  }
}

const keyOf = (s: Sticker): string => `${s.pos}|${s.normal}`;
const INDEX = new Map(STICKERS.map((s, i) => [keyOf(s), i]));

/** The sticker index at a cubie corner `pos` facing `normal`. */
export function stickerAt(pos: Vec, normal: Vec): number {
  const i = INDEX.get(keyOf({ pos, normal }));
  if (i === undefined) throw new Error(`no sticker at ${pos} facing ${normal}`);
  return i;
}

// A clockwise quarter turn of a face (seen from outside) is a -90 degree rotation about its outward normal k:
// v -> -(k x v) + k (k . v). `src[i]` is the sticker whose colour moves to i.
function quarterTurn(face: (typeof FACES)[number]): Uint8Array {
  const k = FRAMES[face].n;
  const rot = (v: Vec): Vec => {
    const c = cross(k, v),
      d = dot(k, v);
    return [k[0] * d - c[0], k[1] * d - c[1], k[2] * d - c[2]];
  };
  const src = Uint8Array.from({ length: 24 }, (_, i) => i);
  STICKERS.forEach((s, i) => {
    if (dot(s.pos, k) !== 1) return;
    src[stickerAt(rot(s.pos), rot(s.normal))] = i;
  });
  return src;
}

function compose(first: Uint8Array, then: Uint8Array): Uint8Array {
  // Applying `first` then `then`: out[i] = mid[then[i]] = in[first[then[i]]].
  return Uint8Array.from(then, (j) => first[j]!);
}

/** MOVES[m][i]: the sticker whose colour lands on i after move m (m indexes MOVE_NAMES: X, X' per face). */
export const MOVES: Uint8Array[] = (['U', 'D', 'L', 'R', 'F', 'B'] as const).flatMap((f) => {
  const q = quarterTurn(f);
  return [q, compose(compose(q, q), q)];
});

/** The inverse of move m (U <-> U'). */
export const inverseMove = (m: number): number => m ^ 1;

/** A solved cube: face f carries colour f. */
export function solvedCube(): Uint8Array {
  return Uint8Array.from({ length: 24 }, (_, i) => (i / 4) | 0);
}

/** Apply move m to `state` in place, using `scratch` (24 bytes) as a buffer. */
export function applyMove(state: Uint8Array, m: number, scratch: Uint8Array): void {
  const src = MOVES[m]!;
  scratch.set(state);
  for (let i = 0; i < 24; i++) state[i] = scratch[src[i]!]!;
}

/** Every face a single colour (any orientation of the whole cube counts, as in RAGEN). */
export function isSolved(state: Uint8Array): boolean {
  for (let f = 0; f < 24; f += 4) {
    const c = state[f];
    if (state[f + 1] !== c || state[f + 2] !== c || state[f + 3] !== c) return false;
  }
  return true;
}

/** The move index of a name ("R", "r'", "R’"), or -1. */
export function moveIndex(name: string): number {
  const s = name.trim().replace(/[’`′]/g, "'").toUpperCase();
  return (MOVE_NAMES as readonly string[]).indexOf(s);
}
