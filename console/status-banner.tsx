import type { Reach } from "./api/health.ts";

/**
 * Whether what the page shows is live: with the gateway gone it says so at once (and the page
 * below is greyed, its statuses being only the last ones known), then "Connected again" for a few
 * seconds once it answers. Streams resume by themselves from the last event seen (stream.ts).
 */
export function ReachBanner({ reach }: { reach: Reach }) {
	if (reach === "online") return <div class="reach-slot" role="status" aria-live="polite" />;
	return (
		<div class="reach-slot" role="status" aria-live="polite">
			{reach === "offline" ? (
				<p class="reach offline">
					<strong>Offline</strong> The gateway cannot be reached. What you see is what it last said; retrying every few
					seconds…
				</p>
			) : (
				<p class="reach back">
					<strong>Connected again</strong> The gateway answers; conversations pick up where they stopped.
				</p>
			)}
		</div>
	);
}
