// Package proc holds what the zbstream command needs of the child
// processes it starts (the demo's server and clients, bench -rss's client):
// their peak memory, and a writer their output can share; and what the
// command measures of itself: its CPU time (CPUTime, for bench's CPU per
// row) and its own peak memory (VmHWM("self")).
//
// There are two measures of peak memory, for two uses. PeakRSS is
// ru_maxrss from wait4, which bench -rss reads once its child has ended.
// VmHWM reads /proc/<pid>/status (Linux only), which the demo uses: a
// child that Go's os/exec starts (vfork, then exec) inherits in its
// ru_maxrss the peak of the parent's memory up to the exec (a parent
// holding 300 MB gives /bin/true a ru_maxrss of 310 MB), while VmHWM
// belongs to the process's own address space, and can be read just before
// a SIGKILL.
package proc
