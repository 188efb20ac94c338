import { useEffect, useState } from "preact/hooks";

/** Seconds left until `expiresAt`, ticking once a second. */
export function useSecondsLeft(expiresAt: string | null | undefined): number | undefined {
	const [now, setNow] = useState(Date.now);
	useEffect(() => {
		if (!expiresAt) return;
		const timer = setInterval(() => setNow(Date.now()), 1000);
		return () => clearInterval(timer);
	}, [expiresAt]);
	if (!expiresAt) return undefined;
	return Math.max(0, Math.ceil((Date.parse(expiresAt) - now) / 1000));
}

export function Countdown({ seconds }: { seconds: number | undefined }) {
	if (seconds === undefined) return <span class="muted">No expiry</span>;
	if (seconds === 0) return <span class="badge bad">Expired</span>;
	const text = seconds >= 60 ? `${Math.floor(seconds / 60)} min ${seconds % 60} s` : `${seconds} s`;
	return <span class={seconds < 60 ? "expiry soon" : "expiry"}>Expires in {text}</span>;
}
