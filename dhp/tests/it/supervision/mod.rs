//! The `dhp` program's supervision scenarios.

mod ingest_stopped_writer;
mod liveness_detection;
mod liveness_token_taken_after_poll;
mod recover_race_processes;
mod scale_status_paging;
mod scale_writer_lock;
mod scale_writer_queue;
mod scan_quarantine;
mod sqlite_concurrent_first_open;
mod supervisor_killed_after_commit;
