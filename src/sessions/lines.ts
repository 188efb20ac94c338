import { isEventType } from "../pi/event-type.ts";

const typePrefix = '{"type":"';

/** The type of a record that starts `{"type":"…"` and ends `}` (pi's own layout), else undefined. */
export function typeOf(line: string): string | undefined {
	if (!line.startsWith(typePrefix) || line.charCodeAt(line.length - 1) !== 125) return undefined;
	const end = line.indexOf('"', typePrefix.length);
	if (end === -1) return undefined;
	const type = line.slice(typePrefix.length, end);
	return isEventType(type) ? type : undefined;
}
