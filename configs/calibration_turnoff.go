package configs

// TurnOffKind is the op-time kind of a rank's time off its core during its
// own turn: with Ranks process ranks on the host's cores (shape
// CoreWaitShape) taking turns as the op table taken in turns does
// (TurnsKindPrefix; calib/turnoff.go), the turn's wall time from its
// receive's return to its hand-on less its thread's CPU time, the mean
// over the turns whose time on the core falls in one band, at Size the
// band's median time on the core (ns). The op table prices each op by
// its time on a core, a run's stage by the wall clock; sim adds the entry
// (interpolated by the stage's compute since its last communication) to
// a stage's turn where it computes alone, before the send that ends the
// turn (sim/optable_turnoff.go). Measured at one rank count, kept only at
// it, as the core waits are (isWaitKind).
const TurnOffKind = "turn_off"
