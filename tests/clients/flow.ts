// The same flow as flow.py, through the client @hey-api/openapi-ts
// generated from /openapi.json. Usage: node flow.js BASE_URL OWNER_PASSWORD
import { createClient } from "@hey-api/client-fetch";
import { createMember, createProject, createTask, login, takeTask } from "./ts/index";

const [base, password] = process.argv.slice(2);
const anonymous = createClient({ baseUrl: base });
const session = await login({ client: anonymous, body: { login: "owner", password }, throwOnError: true });
const owner = createClient({ baseUrl: base, headers: { Authorization: `Bearer ${session.data.token}` } });
const project = await createProject({ client: owner, body: { name: "TypeScript", slug: "ts" }, throwOnError: true });
const task = await createTask({
  client: owner,
  query: { project_id: project.data.id },
  body: { title: "Generated from TypeScript" },
  throwOnError: true,
});
const agent = await createMember({ client: owner, body: { name: "TS agent", slug: "ts-agent" }, throwOnError: true });
const asAgent = createClient({ baseUrl: base, headers: { Authorization: `Bearer ${agent.data.token}` } });
const taken = await takeTask({ client: asAgent, path: { task_id: task.data.id }, throwOnError: true });
if (taken.data.status !== "in_progress" || taken.data.assignee?.id !== agent.data.id) {
  throw new Error(`unexpected task: ${JSON.stringify(taken.data)}`);
}
console.log(`typescript client: ${taken.data.key} taken by ${agent.data.slug}`);
