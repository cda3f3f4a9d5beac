// Package lowmem holds the memory tricks of the controller and the bridge,
// the two long-running processes whose memory grows with the number of
// sandboxes. Each trick, and why:
//
//   - cachetrim.go: cached pods keep only what the sandbox reconciler reads,
//     because at 5,000 sandboxes whole pods were 65 MiB of the controller.
//   - sharedtemplate.go: one copy of each distinct pod template behind the
//     cached Sandboxes, because every sandbox of a template carries the same.
//   - intern.go: one copy of each string cached objects repeat (namespace,
//     label keys, phases), because each decoded string is its own allocation.
//   - slim.go: the bridge caches Sandboxes without their pod template,
//     because only the controller reads it and it is most of a Sandbox.
//   - gc.go: GOGC 50, halved during the start, because the controller's CPU
//     is small beside kube-apiserver's and the start sets the peak RSS.
//   - memlimit.go: a soft memory limit of 90% of the container's, because
//     the GC then works harder before the kernel kills the process.
//   - pageout.go: the binary's pages that package inits touched are paged
//     out once started, because 20 MiB of them are never touched again.
//
// Cached objects are never written (a Get hands out a deep copy), which is
// what makes the sharing safe.
package lowmem
