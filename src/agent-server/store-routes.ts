/**
 * The store routes the SDK's `client.store` calls (put, get, delete and
 * search items, list namespaces), on the server's store: the one its graphs
 * get. Bodies and answers in the Agent Server's shapes (`created_at`,
 * `updated_at`); without a store they answer 404 saying so. A `ttl` is
 * refused (items are kept until deleted); `refresh_ttl` is checked and has
 * nothing to refresh.
 */
import type { Context, Hono } from "hono";
import type { BaseStore, Item } from "@langchain/langgraph-checkpoint";
import { BadRequest, body, optionalBoolean, optionalNumber, optionalObject, optionalString } from "./input.js";
import { reply } from "./replies.js";
import { isStringList } from "../core/guards.js";

/** Adds the store routes on `store` (or, without one, routes answering 404 that say so) to `app`. */
export function registerStoreRoutes(app: Hono, store: BaseStore | undefined): void {
  const served = (route: (c: Context, store: BaseStore) => Promise<Response>) => async (c: Context) => {
    if (!store)
      return reply(c, { error: "The local agent server has no store: createLocalAgentServer({ store })" }, 404);
    try {
      return await route(c, store);
    } catch (error) {
      // The store refused the namespace (a root label "langgraph", none at all): the client's mistake.
      // By name: an app may bundle another copy of LangGraph's checkpoint package.
      if (error instanceof Error && error.name === "InvalidNamespaceError") throw new BadRequest(error.message);
      throw error;
    }
  };

  app.put(
    "/store/items",
    served(async (c, store) => {
      const json = await body(c);
      const namespace = namespaceOf(json.namespace, "namespace");
      const key = keyOf(json);
      const value = optionalObject(json, "value");
      if (value === undefined) throw new BadRequest("value must be an object.");
      // A store of the page keeps items until they are deleted: a ttl would be taken and never applied.
      if (json.ttl !== undefined && json.ttl !== null) {
        throw new BadRequest("ttl is not served by the local agent server: its store keeps items until deleted.");
      }
      const index = json.index;
      if (!(index === undefined || index === null || index === false || isStringList(index))) {
        throw new BadRequest(`index must be false or a list of paths; got ${JSON.stringify(index)}.`);
      }
      await store.put(namespace, key, value, (index ?? undefined) as false | string[] | undefined);
      return c.body(null, 204);
    }),
  );
  app.get(
    "/store/items",
    served(async (c, store) => {
      const key = c.req.query("key");
      if (key === undefined) throw new BadRequest("key must be a string.");
      const refresh = c.req.query("refresh_ttl");
      if (refresh !== undefined && refresh !== "true" && refresh !== "false") {
        throw new BadRequest(`refresh_ttl must be true or false; got ${JSON.stringify(refresh)}.`);
      }
      const namespace = namespaceOf(c.req.query("namespace")?.split(".") ?? [], "namespace", true);
      return reply(c, toApi(await store.get(namespace, key)));
    }),
  );
  app.delete(
    "/store/items",
    served(async (c, store) => {
      const json = await body(c);
      await store.delete(namespaceOf(json.namespace ?? [], "namespace", true), keyOf(json));
      return c.body(null, 204);
    }),
  );
  app.post(
    "/store/items/search",
    served(async (c, store) => {
      const json = await body(c);
      optionalBoolean(json, "refresh_ttl");
      const items = await store.search(namespaceOf(json.namespace_prefix ?? [], "namespace_prefix", true), {
        filter: optionalObject(json, "filter"),
        limit: optionalNumber(json, "limit") ?? 10,
        offset: optionalNumber(json, "offset") ?? 0,
        query: optionalString(json, "query"),
      });
      return reply(c, { items: items.map(toApi) });
    }),
  );
  app.post(
    "/store/namespaces",
    served(async (c, store) => {
      const json = await body(c);
      const namespaces = await store.listNamespaces({
        prefix: json.prefix == null ? undefined : namespaceOf(json.prefix, "prefix"),
        suffix: json.suffix == null ? undefined : namespaceOf(json.suffix, "suffix"),
        maxDepth: optionalNumber(json, "max_depth"),
        limit: optionalNumber(json, "limit") ?? 100,
        offset: optionalNumber(json, "offset") ?? 0,
      });
      return reply(c, { namespaces });
    }),
  );
}

/**
 * `value` if it is a namespace, as the Agent Server takes one: a list of
 * labels, each non-empty and without a period (the SDK joins them with one);
 * `empty`: the empty list is taken too (the whole store).
 */
function namespaceOf(value: unknown, name: string, empty = false): string[] {
  const ok =
    Array.isArray(value) && value.every((label) => typeof label === "string" && label !== "" && !label.includes("."));
  if (!ok || (!empty && value.length === 0)) {
    throw new BadRequest(
      `${name} must be a list of labels, each non-empty and without a period${empty ? "" : " (one at least)"}; got ${JSON.stringify(value)}.`,
    );
  }
  return value as string[];
}

function keyOf(json: Record<string, unknown>): string {
  const key = optionalString(json, "key");
  if (key === undefined) throw new BadRequest("key must be a string.");
  return key;
}

/** An item as the Agent Server answers it: `created_at` and `updated_at` for `createdAt` and `updatedAt`. */
function toApi(item: Item | null): Record<string, unknown> | null {
  if (item === null) return null;
  const { createdAt, updatedAt, ...rest } = item;
  return { ...rest, created_at: createdAt.toISOString(), updated_at: updatedAt.toISOString() };
}
