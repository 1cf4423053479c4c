// Run by SensorKitTests' ClientAllocatorTests: uses the client library the way an app does, in a
// process of its own, and prints what became of glibc's malloc settings.
//   client-allocator-child SOCKET-PATH
// The socket need not exist: the library sets itself up before it connects.
import SensorKit
import SensorSystem

_ = try? ReaderConnection(
    socketPath: CommandLine.arguments.dropFirst().first ?? "/nonexistent/sensorkitd.sock", app: "com.example.study")
print(AllocatorTuning.current.map { "\($0)" } ?? "untouched")
