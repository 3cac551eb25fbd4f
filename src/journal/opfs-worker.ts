/**
 * The dedicated worker that owns the journal's OPFS files: only a worker may
 * use `FileSystemSyncAccessHandle`, whose `flush()` is what makes an append
 * durable. It runs from a Blob URL built from this function's source (see
 * opfs-backend.ts), so it must stay self-contained: no imports, no outside
 * names.
 *
 * Requests: `{ id, op, file, bytes?, length? }` with op one of
 * `read | truncate | append | write | overwrite | close`; replies `{ id, bytes? }` or
 * `{ id, error: { name, message } }`.
 */
export function journalWorkerMain(): void {
  type Handle = {
    read(buffer: Uint8Array, options: { at: number }): number;
    write(buffer: Uint8Array, options: { at: number }): number;
    truncate(size: number): void;
    getSize(): number;
    flush(): void;
    close(): void;
  };
  type Request = { id: number; op: string; dir: string; file: string; bytes?: Uint8Array; length?: number };
  const scope = self as unknown as {
    onmessage: ((event: MessageEvent<Request>) => void) | null;
    postMessage(message: unknown, transfer?: Transferable[]): void;
  };
  const handles = new Map<string, Promise<Handle>>();
  let chain: Promise<unknown> = Promise.resolve();

  async function handle(dir: string, file: string): Promise<Handle> {
    const key = `${dir}/${file}`;
    let opened = handles.get(key);
    if (!opened) {
      opened = (async () => {
        const root = await navigator.storage.getDirectory();
        const folder = await root.getDirectoryHandle(dir, { create: true });
        const fileHandle = await folder.getFileHandle(file, { create: true });
        return (await (
          fileHandle as unknown as { createSyncAccessHandle(): Promise<Handle> }
        ).createSyncAccessHandle()) as Handle;
      })();
      opened.catch(() => handles.delete(key));
      handles.set(key, opened);
    }
    return opened;
  }

  async function run(request: Request): Promise<Uint8Array | undefined> {
    if (request.op === "close") {
      for (const opened of handles.values()) {
        try {
          (await opened).close();
        } catch {
          // Never opened: nothing to close.
        }
      }
      handles.clear();
      return undefined;
    }
    const h = await handle(request.dir, request.file);
    switch (request.op) {
      case "read": {
        const out = new Uint8Array(h.getSize());
        let offset = 0;
        while (offset < out.length) {
          const n = h.read(out.subarray(offset), { at: offset });
          if (n <= 0) break;
          offset += n;
        }
        return out.subarray(0, offset);
      }
      case "truncate":
        h.truncate(request.length!);
        h.flush();
        return undefined;
      case "append": {
        const at = h.getSize();
        const bytes = request.bytes!;
        let offset = 0;
        while (offset < bytes.length) offset += h.write(bytes.subarray(offset), { at: at + offset });
        h.flush();
        return undefined;
      }
      case "write": {
        const bytes = request.bytes!;
        h.truncate(0);
        let offset = 0;
        while (offset < bytes.length) offset += h.write(bytes.subarray(offset), { at: offset });
        h.flush();
        return undefined;
      }
      case "overwrite": {
        // In place, never shorter: a crash leaves old or new bytes, never an empty file.
        const bytes = request.bytes!;
        let offset = 0;
        while (offset < bytes.length) offset += h.write(bytes.subarray(offset), { at: offset });
        h.flush();
        return undefined;
      }
      default:
        throw new Error(`unknown journal request "${request.op}"`);
    }
  }

  scope.onmessage = (event) => {
    const request = event.data;
    chain = chain.then(async () => {
      try {
        const bytes = await run(request);
        if (bytes) scope.postMessage({ id: request.id, bytes }, [bytes.buffer as ArrayBuffer]);
        else scope.postMessage({ id: request.id });
      } catch (error) {
        const { name, message } = (error ?? {}) as { name?: string; message?: string };
        scope.postMessage({ id: request.id, error: { name: name ?? "Error", message: message ?? String(error) } });
      }
    });
  };
}
