import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { post, seg } from "../api/client.ts";
import { followEvent } from "./transcript.tsx";

/**
 * The message box. Enter sends (a prompt when idle, a steer while a run goes on); Shift+Enter is a
 * new line. While running: steer, follow up after the run, or abort it.
 */
export function Composer({ id, running, children }: { id: string; running: boolean; children?: ComponentChildren }) {
	const [text, setText] = useState("");
	const [busy, setBusy] = useState(false);
	const [error, setError] = useState<string>();
	const send = async (kind: "prompt" | "steer" | "follow-up") => {
		const message = text.trim();
		if (!message) return;
		setBusy(true);
		setError(undefined);
		dispatchEvent(new Event(followEvent));
		try {
			await post(`/v1/sessions/${seg(id)}/${kind}`, { message });
			setText("");
		} catch (e) {
			setError((e as Error).message);
		} finally {
			setBusy(false);
		}
	};
	const abort = () => post(`/v1/sessions/${seg(id)}/abort`).catch((e: Error) => setError(e.message));
	return (
		<form
			class="composer"
			onSubmit={(e) => {
				e.preventDefault();
				void send(running ? "steer" : "prompt");
			}}
		>
			<label for="message" class="sr">
				Message
			</label>
			<textarea
				id="message"
				rows={2}
				placeholder={
					running ? "Steer the run, or follow up after it…" : "Ask the agent…  (Enter sends, Shift+Enter: new line)"
				}
				value={text}
				onInput={(e) => setText(e.currentTarget.value)}
				onKeyDown={(e) => {
					if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
						e.preventDefault();
						void send(running ? "steer" : "prompt");
					}
				}}
			/>
			<div class="row composer-foot">
				{children}
				<span class="grow" />
				{running ? (
					<>
						<button type="submit" class="primary" disabled={busy}>
							Steer
						</button>
						<button type="button" disabled={busy} onClick={() => send("follow-up")}>
							Follow up
						</button>
						<button type="button" class="danger" onClick={abort}>
							Abort
						</button>
					</>
				) : (
					<button type="submit" class="primary" disabled={busy}>
						Send
					</button>
				)}
			</div>
			{error && (
				<p role="alert" class="error">
					{error}
				</p>
			)}
		</form>
	);
}
