import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/**
 * Processes by pid, from /proc (Linux): what a command started, so a test can say that each one
 * is gone after a signal, not merely that the command's own process exited.
 */
export interface ProcessInfo {
  pid: number;
  ppid: number;
  /** Start time in clock ticks since boot: with the pid, it names one process even if the pid is reused. */
  startTime: string;
  state: string;
  /** The command line, arguments joined with spaces. */
  command: string;
}

export function processInfo(pid: number): ProcessInfo | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name is in parentheses and may hold spaces: the fields after the last ')' are fixed.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
    return { pid, state: fields[0]!, ppid: Number(fields[1]), startTime: fields[19]!, command };
  } catch {
    return undefined;
  }
}

/** The process and all its descendants, as they are now. */
export function processTree(root: number): ProcessInfo[] {
  const all = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map((name) => processInfo(Number(name)))
    .filter((p) => p !== undefined);
  const tree: ProcessInfo[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    const info = all.find((p) => p.pid === pid);
    if (info) tree.push(info);
    for (const child of all.filter((p) => p.ppid === pid)) queue.push(child.pid);
  }
  return tree;
}

/** Whether that very process still runs (a zombie, dead and waiting to be reaped, does not). */
export function isRunning(process: ProcessInfo): boolean {
  const now = processInfo(process.pid);
  return now !== undefined && now.startTime === process.startTime && now.state !== 'Z' && now.state !== 'X';
}

/**
 * Sends `signal` to that very process, and only to it: a pid is reused within minutes on a busy
 * machine, so a process noted earlier is signalled only while its start time is still the one
 * noted. Returns whether the signal was sent (false: it is gone, or the pid is another's now).
 */
export function signalIfStillRunning(process_: ProcessInfo, signal: NodeJS.Signals): boolean {
  if (!isRunning(process_)) return false;
  try {
    process.kill(process_.pid, signal);
    return true;
  } catch {
    return false; // it ended between the check and the signal
  }
}

/** Waits until none of the processes runs; returns those still running when `timeoutMs` is up. */
export async function waitUntilGone(processes: ProcessInfo[], timeoutMs = 20_000): Promise<ProcessInfo[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const running = processes.filter(isRunning);
    if (running.length === 0 || Date.now() > deadline) return running;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export interface CommandProcess {
  child: ChildProcess;
  /** stdout and stderr so far, interleaved. */
  output(): string;
  /** Resolves once the output holds `text`; rejects if the process exits first or `timeoutMs` passes. */
  waitFor(text: string | RegExp, timeoutMs?: number): Promise<string>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts a command with its output collected. */
export function startCommand(
  command: string,
  args: string[],
  options: {
    cwd: string;
    env: Record<string, string | undefined> /** In a process group of its own, as a terminal runs a job. */;
    ownGroup?: boolean;
  },
): CommandProcess {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.ownGroup,
  });
  let out = '';
  const listeners = new Set<() => void>();
  const collect = (chunk: Buffer) => {
    out += chunk.toString();
    for (const listener of listeners) listener();
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    output: () => out,
    exited,
    waitFor: (text, timeoutMs = 90_000) =>
      new Promise<string>((resolve, reject) => {
        const found = () => (typeof text === 'string' ? out.includes(text) : text.test(out));
        const check = () => {
          if (!found()) return;
          listeners.delete(check);
          clearTimeout(timer);
          resolve(out);
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`no ${String(text)} within ${timeoutMs} ms; output:\n${out}`));
        }, timeoutMs);
        listeners.add(check);
        check();
        void exited.then(({ code, signal }) => {
          if (found()) return;
          clearTimeout(timer);
          reject(new Error(`exited (${code ?? signal}) before ${String(text)}; output:\n${out}`));
        });
      }),
  };
}
