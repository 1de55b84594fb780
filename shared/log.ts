/**
 * One JSON line per event on stdout, as CloudWatch Logs ingests it. Callers pass only the fields
 * they mean to log: nothing here ever reads request headers, so no token can reach a log line.
 */
const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;
export type LogLevel = keyof typeof LEVELS;

export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export function createLogger(level: string | undefined = process.env.LOG_LEVEL, write = (line: string) => process.stdout.write(line + '\n')): Logger {
  const threshold = LEVELS[(level?.toLowerCase() as LogLevel) ?? 'info'] ?? LEVELS.info;
  const emit = (name: LogLevel) => (message: string, fields: Record<string, unknown> = {}) => {
    if (LEVELS[name] < threshold) return;
    write(JSON.stringify({ level: name.toUpperCase(), message, timestamp: new Date().toISOString(), ...fields }));
  };
  return { info: emit('info'), warn: emit('warn'), error: emit('error') };
}
