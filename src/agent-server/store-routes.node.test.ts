/**
 * The store routes (store-routes.ts): the SDK's `client.store` on the
 * server's store (an IndexedDBStore), the one its graphs get, in the Agent
 * Server's shapes.
 */
import { afterEach, describe, expect, it } from "vitest";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";

afterEach(closeServers);

describe("store routes", () => {
  // Once answered 404 (not served): client.store failed, though the server has the graphs' store.
  it("put, get, search, list namespaces and delete items of the server's store", async () => {
    const { client } = await openServer("store-routes", true);
    await client.store.putItem(["users", "ann"], "prefs", { theme: "dark" });
    await client.store.putItem(["users", "bob"], "prefs", { theme: "light" });
    const item = await client.store.getItem(["users", "ann"], "prefs");
    expect(item).toMatchObject({ namespace: ["users", "ann"], key: "prefs", value: { theme: "dark" } });
    expect(Number.isNaN(Date.parse(String(item!.createdAt)))).toBe(false);
    expect(await client.store.getItem(["users", "ann"], "missing")).toBeNull();
    const found = await client.store.searchItems(["users"], { filter: { theme: "light" } });
    expect(found.items.map((one) => one.namespace)).toEqual([["users", "bob"]]);
    expect(await client.store.listNamespaces({ prefix: ["users"] })).toEqual({
      namespaces: [
        ["users", "ann"],
        ["users", "bob"],
      ],
    });
    await client.store.deleteItem(["users", "ann"], "prefs");
    expect(await client.store.getItem(["users", "ann"], "prefs")).toBeNull();
  });

  it("refuses bad input (422) naming it, and answers 404 saying why without a store", async () => {
    const { server, client } = await openServer("store-routes", true);
    const put = (json: unknown) =>
      server.fetch("http://local.invalid/store/items", { method: "PUT", body: JSON.stringify(json) });
    for (const [json, field] of [
      [{ namespace: ["a"], key: "k", value: 5 }, "value"],
      [{ namespace: ["a", ""], key: "k", value: {} }, "namespace"],
      [{ namespace: "a", key: "k", value: {} }, "namespace"],
      [{ namespace: ["a"], value: {} }, "key"],
      [{ namespace: ["langgraph"], key: "k", value: {} }, "langgraph"],
      [{ namespace: ["a"], key: "k", value: {}, ttl: 5 }, "ttl"],
    ] as const) {
      const res = await put(json);
      expect([res.status, ((await res.json()) as { message: string }).message]).toEqual([
        422,
        expect.stringContaining(field),
      ]);
    }
    // refresh_ttl has nothing to refresh (no item expires): taken as the SDK sends it, refused otherwise.
    await client.store.putItem(["a"], "k", { v: 1 });
    expect((await client.store.getItem(["a"], "k", { refreshTtl: true }))?.value).toEqual({ v: 1 });
    expect((await client.store.searchItems(["a"], { refreshTtl: true })).items).toHaveLength(1);
    const get = await server.fetch("http://local.invalid/store/items?namespace=a&key=k&refresh_ttl=yes");
    const search = await server.fetch("http://local.invalid/store/items/search", {
      method: "POST",
      body: JSON.stringify({ namespace_prefix: ["a"], refresh_ttl: "yes" }),
    });
    for (const res of [get, search]) {
      expect([res.status, ((await res.json()) as { message: string }).message]).toEqual([
        422,
        expect.stringContaining("refresh_ttl"),
      ]);
    }
    const { server: bare } = await openServer("store-routes-bare");
    const res = await bare.fetch("http://local.invalid/store/items?namespace=a&key=k");
    expect([res.status, JSON.stringify(await res.json())]).toEqual([404, expect.stringContaining("store")]);
  });
});
