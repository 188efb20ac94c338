import { useEffect, useState } from "preact/hooks";

const format = new Intl.RelativeTimeFormat("en", { numeric: "auto", style: "short" });
const steps: [Intl.RelativeTimeFormatUnit, number][] = [
	["second", 60],
	["minute", 60],
	["hour", 24],
	["day", 7],
	["week", 4.35],
	["month", 12],
	["year", Number.POSITIVE_INFINITY],
];

/** "now", "5 min. ago", "yesterday": a time as people say it (seconds under a minute read "now"). */
export function relative(iso: string, now: number): string {
	let amount = (Date.parse(iso) - now) / 1000;
	if (!Number.isFinite(amount)) return "";
	if (Math.abs(amount) < 45) return "now";
	for (const [unit, size] of steps) {
		if (Math.abs(amount) < size) return format.format(Math.round(amount), unit);
		amount /= size;
	}
	return "";
}

/** Re-renders every `ms` so relative times move on by themselves. */
export function useNow(ms = 30_000): number {
	const [now, setNow] = useState(Date.now);
	useEffect(() => {
		const timer = setInterval(() => setNow(Date.now()), ms);
		return () => clearInterval(timer);
	}, [ms]);
	return now;
}

/** A relative time in a <time> element: the exact instant is its datetime and its tooltip. */
export function Ago({ at, now }: { at: string; now: number }) {
	return (
		<time dateTime={at} title={new Date(at).toLocaleString()}>
			{relative(at, now)}
		</time>
	);
}
