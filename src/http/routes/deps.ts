import type { Logger } from "pino";
import type { Cluster } from "../../cluster/cluster.ts";
import type { Config } from "../../config/config.ts";
import type { PolicyEngine } from "../../sessions/dialogs/index.ts";
import type { SessionAccess, SessionRegistry } from "../../sessions/registry/index.ts";
import type { StreamTickets } from "../auth/tickets.ts";

/** What every route factory gets: built once in createApp, no globals. */
export interface Deps {
	config: Config;
	registry: SessionRegistry;
	logger: Logger;
	/** Short-lived stream tickets (for EventSource, which cannot send headers): HTTP's own state. */
	tickets: StreamTickets;
	/** Approval policies (absent in an app built without the store). */
	policies?: PolicyEngine;
	/** Who owns each session and whom it is shared with. */
	access: SessionAccess;
	/** Cluster mode: this node's view of the cluster (undefined until it joined, and on one node). */
	cluster?: () => Cluster | undefined;
}
