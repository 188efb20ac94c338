import { createRoute, z } from "@hono/zod-openapi";
import {
	CreateScheduleBody,
	PatchScheduleBody,
	Schedule,
	ScheduleDetail,
	scheduleExample,
} from "../../../schedules/schemas.ts";
import { json, jsonBody, problem, problems } from "../../transport/openapi.ts";
import { SessionParams } from "../../transport/params.ts";

const ScheduleParams = SessionParams.extend({
	scheduleId: z.string().openapi({
		param: { name: "scheduleId", in: "path" },
		description: "The schedule's id, as `POST …/schedules` answered it",
		example: "sch_Zt3kq0d1v8uY",
	}),
});

const notFound = problem(
	"No such session or schedule: another principal's session (or its schedules) is not there for you, as for an id that never existed",
);
const badTiming = problem(
	"Invalid input, nothing stored: `intervalSeconds` and `cron` both or neither, an interval under --schedule-min-interval-seconds, a cron that is not 5 fields or does not parse, or an unknown time zone; `issues` names the field",
);

export const createSchedule = createRoute({
	operationId: "schedules.create",
	method: "post",
	path: "/v1/sessions/{id}/schedules",
	tags: ["schedules"],
	summary: "Run a prompt in this session every N seconds or on a cron (as the session's owner, within its budget)",
	description:
		"Each tick sends `message` as `POST …/prompt` would, as the session's owner: that principal's scopes, budget, limits and audit apply, and a hibernated session wakes. In cluster mode each tick runs once, on whichever nodes are up (docs/schedules.md).",
	request: {
		params: SessionParams,
		body: jsonBody(CreateScheduleBody, {
			message: "Summarise what changed",
			cron: "0 7 * * *",
			timezone: "Europe/Paris",
		}),
	},
	responses: {
		201: {
			...json(Schedule, "The schedule, with its first run"),
			headers: z.object({
				Location: z.string().openapi({ example: "/v1/sessions/ses_Qm9wYXJ0aWFs/schedules/sch_Zt3kq0d1v8uY" }),
			}),
		},
		400: badTiming,
		...problems(401, 410, 413, 415),
		404: notFound,
		429: problem(
			"`too_many_schedules`: the session has --max-schedules-per-session (10) or its owner --max-schedules-per-principal (100)",
		),
	},
});

export const listSchedules = createRoute({
	operationId: "schedules.list",
	method: "get",
	path: "/v1/sessions/{id}/schedules",
	tags: ["schedules"],
	summary: "The session's schedules, oldest first",
	request: { params: SessionParams },
	responses: {
		200: json(
			z
				.object({ schedules: z.array(Schedule).openapi({ description: "The session's schedules, oldest first" }) })
				.openapi("ScheduleList", { description: "A session's schedules", example: { schedules: [scheduleExample] } }),
			"The schedules",
		),
		...problems(401, 410),
		404: notFound,
	},
});

export const getSchedule = createRoute({
	operationId: "schedules.get",
	method: "get",
	path: "/v1/sessions/{id}/schedules/{scheduleId}",
	tags: ["schedules"],
	summary: "One schedule and its latest ticks (20, newest first)",
	request: { params: ScheduleParams },
	responses: { 200: json(ScheduleDetail, "The schedule and its ticks"), ...problems(401, 410), 404: notFound },
});

export const patchSchedule = createRoute({
	operationId: "schedules.update",
	method: "patch",
	path: "/v1/sessions/{id}/schedules/{scheduleId}",
	tags: ["schedules"],
	summary: "Change a schedule: its message, timing, policies, or pause it (enabled: false)",
	request: { params: ScheduleParams, body: jsonBody(PatchScheduleBody, { enabled: false }) },
	responses: {
		200: json(Schedule, "The schedule as now set"),
		400: badTiming,
		...problems(401, 410, 413, 415),
		404: notFound,
	},
});

export const deleteSchedule = createRoute({
	operationId: "schedules.delete",
	method: "delete",
	path: "/v1/sessions/{id}/schedules/{scheduleId}",
	tags: ["schedules"],
	summary: "Remove a schedule and its ticks (a run it started goes on)",
	request: { params: ScheduleParams },
	responses: { 204: { description: "Removed" }, ...problems(401, 410), 404: notFound },
});
