/** The registry: which sessions exist, who may reach them, where they are stored, live slots and the warm pool. The room's one door. */

export {
	type AccessStore,
	PrincipalName,
	rightsIn,
	SessionAccess,
	SessionAccessRecord,
	SessionGrant,
	type SessionRight,
} from "./access.ts";
export { ForkSessionBody, forkOptions, forkSeed } from "./fork.ts";
export { liveShare } from "./live-cap.ts";
export { parseStoredRecord, tombstoneMs } from "./records.ts";
export { SessionRegistry } from "./registry.ts";
export type { OpenStore, SessionStore, StoredSession, StoreEvents, Tombstone } from "./session-store.ts";
