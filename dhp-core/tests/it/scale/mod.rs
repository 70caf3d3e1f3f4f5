//! Costs that must stay flat with the number of handoffs, and deadlines at scale.

mod consistency_watch;
mod dead_holder_among_many;
mod deadline_lease;
mod deadline_stall;
mod deadline_wallclock;
mod expired_lease_index;
mod first_checkpoint_stall;
mod leader_renewal;
mod noop_pass_reads;
mod writer_queue_stale;
