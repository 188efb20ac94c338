const tone: Record<string, string> = {
	idle: "ok",
	running: "info",
	waiting: "warn",
	starting: "info",
	crashed: "bad",
	exited: "muted",
	stopped: "muted",
	failed: "bad",
};

/** A session's status; an idle one whose last run ended in an error says "failed", never a green idle. */
export function StatusBadge({ status, failed }: { status: string; failed?: boolean }) {
	const shown = failed && status === "idle" ? "failed" : status;
	return <span class={`badge ${tone[shown] ?? "muted"}`}>{shown}</span>;
}
