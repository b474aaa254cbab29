// Everything an agent program started, found and killed when its episode ends. A process group is not enough (a
// detached or daemonised child leaves it), so on Linux /proc is walked: a process belongs to the episode when it
// carries
// the episode's marker variable (inherited by every descendant, whatever session or parent it moves to), or shares the
// program's session or group, or is a child of one that belongs. No root, namespaces or native code needed. Elsewhere
// (macOS, BSD) there is no /proc: only the program's process group is killed.
import { readdirSync, readFileSync } from 'node:fs';

/** The environment variable that marks an episode's processes; its value is a random tag per episode. */
export const EPISODE_TAG_VARIABLE = 'RAGEN_EPISODE_TAG';

/** Whether the process tree can be walked here (Linux /proc). */
export const canTrackTree = process.platform === 'linux' && statOf(process.pid) !== null;

/** A process as /proc/<pid>/stat shows it. */
interface ProcStat {
  pid: number;
  ppid: number;
  pgrp: number;
  session: number;
  /** R, S, D, Z, T, ... */
  state: string;
  /** Clock ticks after boot when it started. */
  start: number;
}

/** `pid`'s stat, or null when it is gone or unreadable. */
function statOf(pid: number): ProcStat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null; // exited between the listing and the read, or no /proc
  }
  // The command name (field 2) may hold spaces and parentheses: the fields after it start after its last ')'.
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { pid, ppid: Number(f[1]), pgrp: Number(f[2]), session: Number(f[3]), state: f[0]!, start: Number(f[19]) };
}

/** Whether `pid`'s environment holds `name=value` (false when unreadable: another user's process, or gone). */
function carries(pid: number, entry: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(entry);
  } catch {
    return false;
  }
}

/** When `pid` started (clock ticks after boot), to skip older processes in later scans; 0 when unknown. */
export function startTicks(pid: number | undefined): number {
  return pid === undefined ? 0 : (statOf(pid)?.start ?? 0);
}

/**
 * The live processes of an episode whose program is `root` (a session leader, started with `detached`) and whose
 * processes carry `EPISODE_TAG_VARIABLE=tag`; only processes started at `since` or later are looked at.
 */
export function episodeProcesses(root: number, tag: string, since: number): number[] {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return [];
  }
  const entry = `${EPISODE_TAG_VARIABLE}=${tag}`;
  const candidates = names
    .filter((n) => /^\d+$/.test(n) && Number(n) !== process.pid)
    .map((n) => statOf(Number(n)))
    .filter((s): s is ProcStat => s !== null && s.start >= since && s.state !== 'Z' && s.state !== 'X');
  const members = new Set(
    candidates
      .filter((s) => s.pid === root || s.session === root || s.pgrp === root || carries(s.pid, entry))
      .map((s) => s.pid),
  );
  // Children of members (one that cleared its environment but kept its parent), to a fixed point.
  for (let grew = true; grew;) {
    grew = false;
    for (const s of candidates) {
      if (!members.has(s.pid) && members.has(s.ppid)) {
        members.add(s.pid);
        grew = true;
      }
    }
  }
  return [...members];
}

/**
 * SIGKILL the program's process group, then every process of the episode (see `episodeProcesses`), scanning again
 * until a scan finds none not already killed (a process forking meanwhile is caught next round). Synchronous, so the
 * trainer's exit hook can call it. Returns the processes killed, and those still found after `rounds` scans.
 */
export function killEpisodeTree(
  root: number,
  tag: string,
  since: number,
  rounds = 50,
): { killed: number; left: number } {
  signal(-root); // the group first: everything on platforms without /proc
  if (!canTrackTree) return { killed: 0, left: 0 };
  const killed = new Set<number>();
  const denied = new Set<number>(); // e.g. a setuid program it ran: not ours to end
  for (let r = 0; r < rounds; r++) {
    const fresh = episodeProcesses(root, tag, since).filter((pid) => !killed.has(pid) && !denied.has(pid));
    if (fresh.length === 0) return { killed: killed.size, left: denied.size };
    for (const pid of fresh) (signal(pid) ? killed : denied).add(pid);
  }
  return {
    killed: killed.size,
    left: denied.size + episodeProcesses(root, tag, since).filter((pid) => !killed.has(pid) && !denied.has(pid)).length,
  };
}

/** SIGKILL `pid` (a negative pid: its group); false when not permitted. One already gone counts as killed. */
function signal(pid: number): boolean {
  try {
    process.kill(pid, 'SIGKILL');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EPERM') return false;
    if (code !== 'ESRCH') throw err; // ESRCH: already gone
  }
  return true;
}
