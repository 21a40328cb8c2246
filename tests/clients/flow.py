"""Logs in, creates a project and a task, creates an agent and takes the
task as that agent, through the client openapi-python-client generated
from the server's /openapi.json. Usage: flow.py BASE_URL OWNER_PASSWORD"""
import sys

from taskboard_client import AuthenticatedClient, Client
from taskboard_client.api.auth import login
from taskboard_client.api.members import create_member
from taskboard_client.api.projects import create_project
from taskboard_client.api.tasks import create_task, take_task
from taskboard_client.models import LoginRequest, NewMember, NewProject, NewTask, Task

base, password = sys.argv[1], sys.argv[2]
session = login.sync(client=Client(base_url=base), body=LoginRequest(login="owner", password=password))
owner = AuthenticatedClient(base_url=base, token=session.token)
project = create_project.sync(client=owner, body=NewProject(name="Python", slug="py"))
task = create_task.sync(client=owner, body=NewTask(title="Generated from Python"), project_id=project.id)
assert isinstance(task, Task), task
agent = create_member.sync(client=owner, body=NewMember(name="Py agent", slug="py-agent"))
as_agent = AuthenticatedClient(base_url=base, token=agent.token)
taken = take_task.sync(client=as_agent, task_id=task.id)
assert isinstance(taken, Task), taken
assert taken.status == "in_progress" and str(taken.assignee.id) == str(agent.id), taken
print(f"python client: {taken.key} taken by {agent.slug}")
