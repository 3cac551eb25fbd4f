/**
 * EncryptedSerializer figures: put + getTuple encrypted vs plain, in the
 * same run, and PBKDF2 at the default iteration count.
 */
import { emptyCheckpoint, uuid6, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { DEFAULT_PBKDF2_ITERATIONS, EncryptedSerializer, IndexedDBSaver } from "../../src/index.js";
import { deleteDatabase, median, ms, msPerCall, row, type BenchRow, type Suite } from "../harness.js";

const SUITE = "encryption";
const meta: CheckpointMetadata = { source: "loop", step: 1, parents: {} };

const configs = new WeakMap<IndexedDBSaver, RunnableConfig>();

/** Ms per put + getTuple on `saver`, each put on top of the last (one round of 50 after a short warm-up). */
async function putAndGet(saver: IndexedDBSaver): Promise<number> {
  let config: RunnableConfig = configs.get(saver) ?? { configurable: { thread_id: "t", checkpoint_ns: "" } };
  const values = {
    messages: [
      { role: "user", content: "x".repeat(600) },
      { role: "assistant", content: "y".repeat(600) },
    ],
    notes: "z".repeat(600),
  };
  return msPerCall(
    async () => {
      const versions = { messages: saver.getNextVersion(1), notes: saver.getNextVersion(1) };
      config = await saver.put(
        config,
        { ...emptyCheckpoint(), id: uuid6(0), channel_values: values, channel_versions: versions },
        meta,
        versions,
      );
      await saver.getTuple(config);
      configs.set(saver, config);
    },
    { rounds: 1, warmup: 5 },
  );
}

/** The encryption suite. */
export const encryptionSuite: Suite = {
  name: SUITE,
  async run(): Promise<BenchRow[]> {
    const salt = "bench-salt-0000000";
    const derive: number[] = [];
    let serde: EncryptedSerializer | undefined;
    for (let i = 0; i < 3; i++) {
      const start = performance.now();
      serde = await EncryptedSerializer.fromPassphrase("correct horse battery staple", { salt });
      derive.push(performance.now() - start);
    }
    const plainName = `bench-plain-${Date.now()}`;
    const encryptedName = `bench-encrypted-${Date.now()}`;
    const plain = new IndexedDBSaver({ dbName: plainName });
    const encrypted = new IndexedDBSaver({ dbName: encryptedName, serde });
    // Alternating rounds, so a busy spell of the shared machine touches both alike.
    const plainRounds: number[] = [];
    const encryptedRounds: number[] = [];
    for (let round = 0; round < 5; round++) {
      plainRounds.push(await putAndGet(plain));
      encryptedRounds.push(await putAndGet(encrypted));
    }
    const plainTime = median(plainRounds);
    const encryptedTime = median(encryptedRounds);
    await plain.close();
    await encrypted.close();
    await deleteDatabase(plainName);
    await deleteDatabase(encryptedName);
    const pbkdf2 = median(derive);
    return [
      row(SUITE, "put + getTuple, encrypted vs plain", encryptedTime, plainTime, "plain msgpack", ms, { max: 1.3 }),
      {
        suite: SUITE,
        name: `PBKDF2-SHA256, ${DEFAULT_PBKDF2_ITERATIONS.toLocaleString("en")} iterations`,
        ours: ms(pbkdf2),
        baseline: "—",
        baselineName: "once per unlock",
        ratio: "",
      },
    ];
  },
};
