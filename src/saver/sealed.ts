/**
 * What only an encrypting serializer's rows need, loaded as one chunk by the
 * first encrypted put or walk: the hash chain of parent links (chain.ts,
 * hashed with WebCrypto's SHA-256) and the check of the links a walk follows
 * (verify-links.ts). A saver without encryption never loads it: its delta
 * walks and prunes have no sealed links to check.
 */
export { noteWrites, seal } from "./chain.js";
export { checkChains, checkListedWrites, finishLinkCheck, verifyParentLinks, type LinkCheck } from "./verify-links.js";
