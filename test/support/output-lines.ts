/**
 * What this process writes to stdout and stderr, line by line, while captured: what Lambda would
 * send to CloudWatch Logs. Powertools' Logger and Metrics write through a Console of their own made
 * on process.stdout and process.stderr (not the global console, which vitest takes over), so the
 * streams' write is where their lines pass. Lines that are not JSON objects go on to the stream.
 */
export function captureOutput() {
  const lines: Record<string, any>[] = [];
  const texts: string[] = [];
  const restore: (() => void)[] = [];
  for (const stream of [process.stdout, process.stderr]) {
    const original = stream.write;
    stream.write = function capture(this: NodeJS.WriteStream, chunk: unknown, ...rest: unknown[]) {
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8');
      const passOn: string[] = [];
      for (const line of text.split('\n').filter(Boolean)) {
        try {
          const parsed = JSON.parse(line) as unknown;
          if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
          lines.push(parsed as Record<string, any>);
          texts.push(line);
        } catch {
          passOn.push(line);
        }
      }
      const callback = rest.find((arg) => typeof arg === 'function') as (() => void) | undefined;
      if (passOn.length === 0) {
        callback?.();
        return true;
      }
      return original.call(this, `${passOn.join('\n')}\n`, ...(rest as []));
    } as typeof stream.write;
    restore.push(() => {
      stream.write = original;
    });
  }
  return {
    /** The JSON lines written so far, parsed. */
    lines,
    /** The same lines as written. */
    texts,
    stop: () => {
      for (const undo of restore) undo();
    },
  };
}
