import type { Context } from "hono";
import type { ScheduleService } from "../../../schedules/service.ts";
import { notFound } from "../../auth/ownership.ts";
import { hasScope } from "../../auth/principals.ts";
import { type AppEnv, createRouter } from "../../transport/openapi.ts";
import { ApiError } from "../../transport/problem.ts";
import type { Deps } from "../deps.ts";
import { createSchedule, deleteSchedule, getSchedule, listSchedules, patchSchedule } from "./schedules.routes.ts";

/**
 * `…/schedules`: a session's schedules (src/schedules/). The session's owner (or an admin) only: a
 * principal it is shared with, even to write, gets the 404 of a session that is not there, since a
 * schedule runs as the owner and spends the owner's budget. `service` is read per request: startGateway
 * makes it once the store is open.
 */
export function schedulesRouter({ registry, access }: Deps, service: () => ScheduleService | undefined) {
	/** The session's owner, once the caller may manage its schedules; the service to do it with. */
	const owned = (c: Context<AppEnv>, id: string): { owner: string; schedules: ScheduleService } => {
		const schedules = service();
		if (!schedules)
			throw new ApiError(
				404,
				"schedules_unavailable",
				"Schedules are off: this app was built without the gateway's store",
			);
		// 404 or 410 for a session that is not here (the routing middleware brought the request to its node).
		registry.get(id);
		const owner = access.get(id).owner;
		const principal = c.get("principal");
		if (!principal || (principal.name !== owner && !hasScope(principal, "admin"))) throw notFound(id);
		return { owner, schedules };
	};
	return createRouter()
		.openapi(createSchedule, async (c) => {
			const { id } = c.req.valid("param");
			const { owner, schedules } = owned(c, id);
			const schedule = await schedules.create(id, owner, c.req.valid("json"));
			const location = `/v1/sessions/${encodeURIComponent(id)}/schedules/${schedule.id}`;
			return c.json(schedule, 201, { Location: location });
		})
		.openapi(listSchedules, async (c) => {
			const { id } = c.req.valid("param");
			return c.json({ schedules: await owned(c, id).schedules.list(id) }, 200);
		})
		.openapi(getSchedule, async (c) => {
			const { id, scheduleId } = c.req.valid("param");
			return c.json(await owned(c, id).schedules.get(id, scheduleId), 200);
		})
		.openapi(patchSchedule, async (c) => {
			const { id, scheduleId } = c.req.valid("param");
			return c.json(await owned(c, id).schedules.patch(id, scheduleId, c.req.valid("json")), 200);
		})
		.openapi(deleteSchedule, async (c) => {
			const { id, scheduleId } = c.req.valid("param");
			await owned(c, id).schedules.delete(id, scheduleId);
			return c.body(null, 204);
		});
}
