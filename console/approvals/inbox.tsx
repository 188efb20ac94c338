import { useEffect, useRef, useState } from "preact/hooks";
import { get, seg } from "../api/client.ts";
import type { Approval, Whoami } from "../api/types.ts";
import { can } from "../auth/scopes.ts";
import { sessionHref } from "../router.ts";
import { Changes } from "../workspace/changes.tsx";
import { reviewHref } from "../workspace/runs.tsx";
import { Dialog } from "./dialog.tsx";
import { askNotifications, canAskNotifications } from "./notify.ts";
import type { Pending } from "./pending.ts";
import { ToolCallCard, useSettledCalls } from "./tool-call.tsx";

/** Every pending dialog across sessions; one settled here stays shown with its outcome. */
export function Inbox({ me, pending, names }: { me: Whoami; pending: Pending; names: Map<string, string> }) {
	const settled = useSettled(pending.approvals);
	const settledCalls = useSettledCalls(pending.toolCalls);
	const [askable, setAskable] = useState(canAskNotifications);
	const shown = [...pending.approvals, ...settled];
	const calls = [...pending.toolCalls, ...settledCalls];
	return (
		<section aria-labelledby="inbox-title">
			<div class="bar">
				<h1 id="inbox-title">Approvals</h1>
				{askable && (
					<button type="button" class="quiet" onClick={() => askNotifications().finally(() => setAskable(false))}>
						Notify me
					</button>
				)}
			</div>
			{shown.length === 0 && calls.length === 0 && <p class="muted">Nothing waits for an answer.</p>}
			<ul class="plain">
				{calls.map((call) => (
					<li key={`call:${call.id}`}>
						<ToolCallCard call={call} me={me} onDone={pending.refresh} sessionName={names.get(call.sessionId)} />
						{can(me, "sessions:read") && (
							<p class="meta">
								<a href={sessionHref(call.sessionId)}>
									Open session <span class="mono">{names.get(call.sessionId) ?? call.sessionId}</span>
								</a>
							</p>
						)}
					</li>
				))}
				{shown.map((approval) => (
					<li key={approval.id}>
						<ApprovalWithContext
							approval={approval}
							me={me}
							onDone={pending.refresh}
							sessionName={names.get(approval.sessionId)}
						/>
					</li>
				))}
			</ul>
		</section>
	);
}

/** A dialog next to what the agent did so far in its session's folder. */
export function ApprovalWithContext(props: {
	approval: Approval;
	me: Whoami;
	onDone: () => void;
	inSession?: boolean;
	sessionName?: string;
}) {
	const { approval, me } = props;
	return (
		<div class="with-context">
			<Dialog approval={approval} me={me} onDone={props.onDone} sessionName={props.sessionName} />
			{!props.inSession && can(me, "sessions:read") && (
				<p class="meta">
					<a href={sessionHref(approval.sessionId)}>
						Open session <span class="mono">{props.sessionName ?? approval.sessionId}</span>
					</a>
				</p>
			)}
			{can(me, "sessions:read") && (
				<details class="changes">
					<summary>What the agent changed</summary>
					<a class="to-review" href={reviewHref(approval.sessionId)}>
						Open in the review
					</a>
					<Changes sessionId={approval.sessionId} />
				</details>
			)}
		</div>
	);
}

/** Approvals that left the pending list while on screen, kept with their outcome (read back from the API). */
function useSettled(current: Approval[]): Approval[] {
	const seen = useRef(new Map<string, Approval>());
	const [settled, setSettled] = useState<Approval[]>([]);
	useEffect(() => {
		const ids = new Set(current.map((a) => a.id));
		for (const gone of seen.current.values()) {
			if (ids.has(gone.id)) continue;
			get<Approval>(`/v1/sessions/${seg(gone.sessionId)}/approvals/${seg(gone.id)}`)
				.then((a) => setSettled((s) => [a, ...s.filter((x) => x.id !== a.id)].slice(0, 20)))
				.catch(() => {});
		}
		seen.current = new Map(current.map((a) => [a.id, a]));
	}, [current]);
	return settled.filter((a) => !current.some((c) => c.id === a.id));
}
