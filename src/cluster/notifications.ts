/**
 * What nodes tell each other: something in the approval inbox changed on `node` (`approvals`),
 * or `node` changed a webhook definition (`webhooks`: every node reads them again).
 */
export interface ClusterNotice {
	type: "approvals" | "webhooks";
	node: string;
}

/**
 * What cluster mode needs to wake a waiter on another node at once (a long-poll of the approval
 * inbox), declared here so the cluster does not depend on the database that carries it
 * (src/store/postgres/notifications.ts: LISTEN/NOTIFY). A notice may be lost (while the listener
 * reconnects): a waiter re-reads the state anyway, so a lost notice costs only latency.
 */
export interface NoticeChannel {
	/** Fire and forget: a notice that cannot be sent is only a late wake-up elsewhere. */
	send(notice: ClusterNotice): void;
	/**
	 * Starts listening: `deliver` gets every node's notices, this node's own included, until
	 * close(). Rejects when the first attempt fails; after a loss it reconnects by itself.
	 */
	listen(deliver: (notice: ClusterNotice) => void): Promise<void>;
	/** Stops listening; idempotent. */
	close(): Promise<void>;
}
