//! The leases a connection holds, so its tools present them.
//!
//! A task held under a lease is fenced (docs/rules.md, fencing): a
//! change sent with a lease id that is no longer the task's current one
//! is refused. The tools that take or renew a lease (`claim_task`,
//! `take_task`, `heartbeat`) remember its id under the task's id and key;
//! every later tool call naming that task presents it, as `Taskboard-Lease`
//! does over HTTP. So an agent whose lease ran out and went to another
//! learns it at its next write (409) instead of changing work that is no
//! longer its own. A task answered without a lease is forgotten.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;
use uuid::Uuid;

/// The tools whose answer is a task leased to the caller.
const LEASING: &[&str] = &["claim_task", "take_task", "heartbeat"];

/// Lease ids by task id and by lower-case task key.
#[derive(Debug, Default)]
pub(crate) struct Leases {
    held: Mutex<HashMap<String, Uuid>>,
}

impl Leases {
    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<String, Uuid>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The lease held on the task a tool's arguments name, if any.
    pub(crate) fn for_args(&self, args: &serde_json::Map<String, Value>) -> Option<Uuid> {
        let reference = args.get("task")?.as_str()?;
        self.held().get(&reference.to_ascii_lowercase()).copied()
    }

    /// Learns from a tool's answer: a lease taken or renewed is
    /// remembered, a task answered without one is forgotten.
    pub(crate) fn learn(&self, tool: &str, structured: &Value) {
        let Some(task) = structured.get("task").filter(|t| t.is_object()) else { return };
        let (Some(id), Some(key)) =
            (task.get("id").and_then(Value::as_str), task.get("key").and_then(Value::as_str))
        else {
            return;
        };
        let lease = task.get("lease").and_then(|l| l.get("id")).and_then(Value::as_str);
        let mut held = self.held();
        match lease.and_then(|l| l.parse::<Uuid>().ok()) {
            Some(lease) if LEASING.contains(&tool) => {
                held.insert(id.to_ascii_lowercase(), lease);
                held.insert(key.to_ascii_lowercase(), lease);
            }
            Some(_) => {}
            None => {
                held.remove(&id.to_ascii_lowercase());
                held.remove(&key.to_ascii_lowercase());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_lease_taken_is_presented_by_id_and_key_until_a_task_without_one_is_answered() {
        let leases = Leases::default();
        let lease = Uuid::new_v4();
        let id = Uuid::new_v4();
        let task = |lease: Value| json!({"task": {"id": id, "key": "WEB-7", "lease": lease}});
        let by = |reference: &str| leases.for_args(json!({"task": reference}).as_object().unwrap());
        // Reading someone's leased task teaches nothing.
        leases.learn("get_task", &task(json!({"id": lease})));
        assert_eq!(by("WEB-7"), None);
        leases.learn("claim_task", &task(json!({"id": lease})));
        assert_eq!(by("web-7"), Some(lease));
        assert_eq!(by(&id.to_string()), Some(lease));
        leases.learn("update_task", &task(Value::Null));
        assert_eq!(by("WEB-7"), None);
        assert_eq!(by(&id.to_string()), None);
    }
}
