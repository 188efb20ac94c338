import { useState } from "preact/hooks";
import { ApiError, post, seg } from "../api/client.ts";
import type { Approval, ApprovalAnswer, Whoami } from "../api/types.ts";
import { can } from "../auth/scopes.ts";
import { Countdown, useSecondsLeft } from "./countdown.tsx";

/**
 * One approval, drawn by its method: confirm as two buttons, select as one button per option with
 * the option's own text, input/editor as a text field. Every string of it is the agent's: text only.
 */
export function Dialog({ approval, me, onDone }: { approval: Approval; me: Whoami; onDone: () => void }) {
	const [state, setState] = useState<{ busy?: boolean; result?: Approval; error?: string }>({});
	const [remember, setRemember] = useState(false);
	const [text, setText] = useState(approval.prefill ?? "");
	const seconds = useSecondsLeft(approval.expiresAt);
	const shown = state.result ?? approval;
	const open = shown.status === "pending" && seconds !== 0;
	const mayAnswer = can(me, "approvals:answer") && open;
	const answer = async (body: ApprovalAnswer) => {
		setState({ busy: true });
		try {
			const result = await post<Approval>(
				`/v1/sessions/${seg(approval.sessionId)}/approvals/${seg(approval.id)}`,
				body,
			);
			setState({ result });
			onDone();
		} catch (e) {
			const gone = e instanceof ApiError && (e.status === 409 || e.status === 410);
			setState({ error: gone ? `Already settled: ${e.message}` : (e as Error).message });
			if (gone) onDone();
		}
	};
	const withRemember = <T extends object>(body: T) => (remember ? { ...body, remember: "session" as const } : body);
	const titleId = `approval-${approval.id}`;
	return (
		<section class="dialog card" aria-labelledby={titleId}>
			<h3 id={titleId} class="pre">
				{shown.title}
			</h3>
			{shown.message && <p class="pre">{shown.message}</p>}
			<p class="meta">
				<StatusBadge approval={shown} expired={seconds === 0} /> <Countdown seconds={open ? seconds : undefined} />
			</p>
			{mayAnswer && (
				<div class="answer">
					{approval.method === "select" && (
						<fieldset>
							<legend>Choose</legend>
							{(approval.options ?? []).map((option) => (
								<button
									type="button"
									key={option}
									disabled={state.busy}
									onClick={() => answer(withRemember({ value: option }))}
								>
									{option}
								</button>
							))}
						</fieldset>
					)}
					{approval.method === "confirm" && (
						<div class="row">
							<button type="button" disabled={state.busy} onClick={() => answer(withRemember({ confirmed: true }))}>
								Yes
							</button>
							<button type="button" disabled={state.busy} onClick={() => answer(withRemember({ confirmed: false }))}>
								No
							</button>
						</div>
					)}
					{(approval.method === "input" || approval.method === "editor") && (
						<form
							onSubmit={(e) => {
								e.preventDefault();
								void answer(withRemember({ value: text }));
							}}
						>
							<label for={`${titleId}-text`}>Answer</label>
							{approval.method === "editor" ? (
								<textarea
									id={`${titleId}-text`}
									rows={6}
									value={text}
									onInput={(e) => setText(e.currentTarget.value)}
								/>
							) : (
								<input
									id={`${titleId}-text`}
									value={text}
									placeholder={approval.placeholder}
									onInput={(e) => setText(e.currentTarget.value)}
								/>
							)}
							<button type="submit" disabled={state.busy}>
								Submit
							</button>
						</form>
					)}
					<div class="row">
						{approval.method !== "input" && approval.method !== "editor" ? (
							<label class="check">
								<input type="checkbox" checked={remember} onChange={(e) => setRemember(e.currentTarget.checked)} />
								Remember for this session
							</label>
						) : null}
						<button type="button" class="quiet" disabled={state.busy} onClick={() => answer({ cancelled: true })}>
							Dismiss
						</button>
					</div>
				</div>
			)}
			{state.error && (
				<p role="alert" class="error">
					{state.error}
				</p>
			)}
		</section>
	);
}

function StatusBadge({ approval, expired }: { approval: Approval; expired: boolean }) {
	if (approval.status === "pending" && !expired) return <span class="badge warn">Waiting for an answer</span>;
	if (approval.status === "answered") {
		const a = approval.answer as { value?: string; confirmed?: boolean } | null;
		const what = a?.value ?? (a?.confirmed === undefined ? "" : a.confirmed ? "Yes" : "No");
		return (
			<span class="badge ok" role="status">
				Answered: {what} by {approval.resolvedBy ?? "someone"}
			</span>
		);
	}
	return (
		<span class="badge bad" role="status">
			{expired ? "Expired" : approval.status}
		</span>
	);
}
