/**
 * Resident memory of the local stack's processes, read from /proc (Linux): RSS (VmRSS), and PSS
 * (smaps_rollup), which shares each shared page out among the processes mapping it. PostgreSQL's
 * processes all map its shared buffers, so their RSS added up counts those pages once per process;
 * their PSS added up counts them once.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

export interface ProcessMemory {
  pid: number;
  what: string;
  rssMiB: number;
  pssMiB: number;
}

const kib = (text: string, field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);

export function memoryOf(pid: number, what: string): ProcessMemory {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  return { pid, what, rssMiB: kib(status, 'VmRSS') / 1024, pssMiB: kib(rollup, 'Pss') / 1024 };
}

/**
 * CPU time a process has used so far (user + system), in ms: a figure of work done that, unlike
 * requests per second, hardly moves when other processes compete for the cores.
 */
export function cpuMsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  // utime and stime, the 14th and 15th fields of stat, in clock ticks (100 a second on Linux)
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Every process on the machine: pid, parent pid and command line. */
function processes(): { pid: number; ppid: number; args: string }[] {
  return execFileSync('ps', ['-eo', 'pid=,ppid=,args='], { encoding: 'utf8' })
    .split('\n')
    .map((line) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line))
    .filter((match): match is RegExpExecArray => match !== null)
    .map((match) => ({ pid: Number(match[1]), ppid: Number(match[2]), args: match[3]! }));
}

/** Memory of each of `named`, leaving out a process that ended between ps and /proc (a backend may). */
function memoryOfEach(named: { pid: number; what: string }[]): ProcessMemory[] {
  return named.flatMap(({ pid, what }) => {
    try {
      return [memoryOf(pid, what)];
    } catch {
      return [];
    }
  });
}

/** The FerretDB process listening on `port`. */
export function ferretdbProcess(port: number): ProcessMemory | undefined {
  const found = processes().find((p) => /ferretdb/.test(p.args) && p.args.includes(`--listen-addr=127.0.0.1:${port}`));
  return found && memoryOf(found.pid, `FerretDB (:${port})`);
}

/** A PostgreSQL process that is not a backend, with or without a cluster name in its title. */
const BACKGROUND = /^postgres: (?:[^:]+: )?(checkpointer|background writer|walwriter|autovacuum launcher|logical replication launcher|archiver|stats collector)/;

/**
 * The PostgreSQL server FerretDB keeps `database` in: the postmaster, its background processes
 * (checkpointer, writers, launchers) and the backends connected to `database`, which are FerretDB's
 * pool. Backends serving other databases are left out.
 */
export function postgresProcesses(database: string): ProcessMemory[] {
  const all = processes();
  const backends = all.filter((p) => new RegExp(`^postgres: [^:]+: \\S+ ${database} `).test(p.args));
  // the backends' parent, not the first postmaster found: the machine may run other clusters
  const postmaster = all.find((p) => p.pid === backends[0]?.ppid);
  const background = all.filter((p) => p.ppid === postmaster?.pid && BACKGROUND.test(p.args));
  const named = [
    ...(postmaster ? [{ pid: postmaster.pid, what: 'PostgreSQL postmaster' }] : []),
    ...background.map((p) => ({ pid: p.pid, what: `PostgreSQL ${BACKGROUND.exec(p.args)![1]}` })),
    ...backends.map((p) => ({ pid: p.pid, what: `PostgreSQL backend of ${database}` })),
  ];
  return memoryOfEach(named);
}

/**
 * A PostgreSQL cluster of its own (the one in `dir`): its postmaster, every process the postmaster started,
 * and the runuser that started it as the postgres user when the service runs as root.
 */
export function clusterProcesses(dir: string): ProcessMemory[] {
  const all = processes();
  const postmaster = all.find((p) => /^\S*postgres -D /.test(p.args) && p.args.includes(` -D ${dir} `));
  if (!postmaster) return [];
  const runuser = all.find((p) => p.pid === postmaster.ppid && p.args.startsWith('runuser '));
  const children = all.filter((p) => p.ppid === postmaster.pid);
  return memoryOfEach([
    ...(runuser ? [{ pid: runuser.pid, what: 'runuser (starts PostgreSQL)' }] : []),
    { pid: postmaster.pid, what: 'PostgreSQL postmaster' },
    ...children.map((p) => ({ pid: p.pid, what: `PostgreSQL ${BACKGROUND.exec(p.args)?.[1] ?? 'backend'}` })),
  ]);
}
