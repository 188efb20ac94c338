/** A session's event log (replay, gaps, slabs): what streams, webhooks and metrics read. The room's one door. */

export { eventJson, type LoggedEvent } from "./event-log.ts";
export { pinEvent, unpinEvent } from "./log-slabs.ts";
