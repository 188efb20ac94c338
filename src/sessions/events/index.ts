/** A session's event log (replay, gaps, slabs, followers): what streams, webhooks and metrics read. The room's one door. */

export { type ActivityView, activityOf, trackActivity } from "./activity.ts";
export { eventJson, type LoggedEvent } from "./event-log.ts";
export { type Followed, type Following, type FollowOptions, type FollowSink, follow } from "./follower.ts";
export { pinEvent, unpinEvent } from "./log-slabs.ts";
