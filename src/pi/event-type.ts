/**
 * The one rule for what may name an event: pi's types are snake_case words, and the name is
 * written after `event: ` in SSE frames and matched by `?types=`. Anything else (a type holding
 * a line break, a colon, a space) could forge frames, so such a record is not an event.
 */
const eventTypePattern = /^[a-z_]{1,64}$/;

export function isEventType(type: unknown): type is string {
	return typeof type === "string" && eventTypePattern.test(type);
}
