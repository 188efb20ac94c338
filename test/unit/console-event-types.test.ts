import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { eventTypes } from "../../console/api/event-types.ts";
import { consoleEventTypes, eventTypesFile } from "../../scripts/console-event-types.ts";
import { StreamEvent } from "../../src/http/streams/event-schemas.ts";

// The console listens for each event type by name (EventSource has no catch-all): its list was
// kept by hand and missed 8 of the spec's 46 types (egress_denied, folder_sync, line_dropped, …),
// which never reached the console. Now it is generated from openapi.yaml.
const repo = resolve(import.meta.dirname, "../..");
const specText = readFileSync(join(repo, "openapi.yaml"), "utf8");

describe("the console's event types", () => {
	it("console/api/event-types.ts is what `npm run spec` makes of openapi.yaml", () => {
		expect(readFileSync(eventTypesFile, "utf8") === consoleEventTypes(specText), "run `npm run spec`").toBe(true);
	});

	it("are every type of the StreamEvent the gateway declares, each once", () => {
		// Read apart from the generator: the code's union, and the spec's discriminator and oneOf.
		const declared = StreamEvent.options.map((option) => option.shape.type.value as string);
		const spec = parse(specText).components.schemas;
		const inSpec = new Set<string>(Object.keys(spec.StreamEvent.discriminator.mapping));
		for (const member of spec.StreamEvent.oneOf)
			for (const type of spec[member.$ref.split("/").pop()].properties.type.enum) inSpec.add(type);
		expect(declared.length).toBeGreaterThan(40);
		expect([...eventTypes].sort()).toEqual([...new Set(declared)].sort());
		expect([...inSpec].sort()).toEqual([...new Set(declared)].sort());
		expect(new Set(eventTypes).size).toBe(eventTypes.length);
	});
});
