const tone: Record<string, string> = {
	idle: "ok",
	running: "info",
	waiting: "warn",
	starting: "info",
	crashed: "bad",
	exited: "muted",
	stopped: "muted",
};

export function StatusBadge({ status }: { status: string }) {
	return <span class={`badge ${tone[status] ?? "muted"}`}>{status}</span>;
}
