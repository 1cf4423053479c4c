import Dispatch
import Foundation

extension Daemon {
    /// SIGHUP (`systemctl reload sensorkitd`): the apps in `apps.d` and the configuration's grants
    /// are read again and take effect without a restart. Sources, pipeline and store keep running,
    /// so no sample is lost. A configuration that no longer parses is refused and the running one
    /// stays; settings that shape the store, the drivers or the reader limits are fixed at start,
    /// and the log says when one of them changed (docs/configuration.md, "Reloading").
    public func reload() {
        let journal = parts.journal
        notifier.notify("RELOADING=1\nMONOTONIC_USEC=\(DispatchTime.now().uptimeNanoseconds / 1000)")
        let configuration: DaemonConfiguration
        do {
            configuration = try DaemonCommand.loadConfiguration(parts.paths.config)
        } catch {
            journal.error("reload: configuration \(parts.paths.config): \(error); keeping the running configuration")
            notifier.notify("READY=1\nSTATUS=reload refused: configuration \(parts.paths.config) is invalid")
            return
        }
        let (registry, problems) = AppRegistry.load(directory: parts.paths.appsDirectory)
        for problem in problems { journal.warning("\(problem), ignoring") }
        if Self.differsBeyondGrants(running: parts.configuration, read: configuration) {
            journal.warning(
                "reload: settings other than [grant] sections changed in \(parts.paths.config); they take effect at the next restart"
            )
        }
        let done = DispatchSemaphore(value: 0)
        service.reload(registry: registry, preGranted: configuration.grants) { done.signal() }
        done.wait()
        journal.notice(
            "reloaded: \(registry.apps.count) app(s) from \(parts.paths.appsDirectory), \(configuration.grants.count) configured grant(s)"
        )
        notifier.notify("READY=1\nSTATUS=recording for \(registry.apps.count) app(s)")
    }

    /// Whether anything but the `[grant]` sections differs: only grants (and apps) apply live.
    static func differsBeyondGrants(running: DaemonConfiguration, read: DaemonConfiguration) -> Bool {
        var (running, read) = (running, read)
        running.grants = []
        read.grants = []
        return running != read
    }
}
