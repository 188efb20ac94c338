import type { Session } from "../api/types.ts";
import type { Transcript } from "./reducer.ts";

/** Why pi is not running, in words: from the session_exit the stream carried, else the session's own fields. */
export function stopReason(session: Session, exit: Transcript["exit"]): string {
	const reason = exit?.reason ?? session.status;
	const code = exit?.code ?? session.exit?.code ?? null;
	const signal = exit?.signal ?? session.exit?.signal ?? null;
	const how = signal ? `was killed by ${signal}` : code !== null ? `exited with code ${code}` : "stopped";
	switch (reason) {
		case "crashed":
			return `pi crashed: it ${how}.`;
		case "lost":
			return "pi stopped with its gateway (an unclean stop): the run in progress was lost.";
		case "idle":
			return "The gateway stopped pi after it was idle for a while (hibernated); nothing was lost.";
		case "lru":
			return "The gateway stopped pi to make room for another session; nothing was lost.";
		case "shutdown":
			return "The gateway was stopped or restarted, and pi with it.";
		case "exited":
			return `pi ${how}.`;
		default:
			return session.exit ? `pi ${how}.` : "pi is not running.";
	}
}

/**
 * In place of the composer when no pi runs: why it stopped (with the last lines pi wrote to stderr
 * when it crashed) and Resume, which starts pi again on the session's file.
 */
export function Stopped(props: {
	session: Session;
	exit: Transcript["exit"];
	mayResume: boolean;
	onResume: () => void;
}) {
	const { session } = props;
	const tail = (props.exit?.stderrTail || session.exit?.stderrTail || "").trim();
	const crashed = (props.exit?.reason ?? session.status) === "crashed";
	return (
		<section class={`stopped card ${crashed ? "bad" : ""}`} aria-labelledby="stopped-title">
			<h2 id="stopped-title">{crashed ? "This session crashed" : "This session is not running"}</h2>
			<p>{stopReason(session, props.exit)}</p>
			{tail && (
				<details open={crashed}>
					<summary>What pi wrote last (stderr)</summary>
					<pre class="output">{tail}</pre>
				</details>
			)}
			{session.resumable ? (
				props.mayResume && (
					<div class="row">
						<button type="button" class="primary" onClick={props.onResume}>
							Resume session
						</button>
						<span class="muted">Starts pi again on this session's file: the conversation goes on.</span>
					</div>
				)
			) : (
				<p class="muted">It cannot be resumed: it kept no session file (persist: false).</p>
			)}
		</section>
	);
}
