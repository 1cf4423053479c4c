import Foundation
import LocationBridge
import SensorKitModel
import Synchronization
import UsageBridge

/// The reader socket's door for the session agent (docs/protocol.md §3.7): an admin session
/// becomes an agent session with `agent` when its peer's uid holds seat0's active local session,
/// and `usage` requests then hand over events — checked again each time, bounded in number per
/// request and in rate per connection, translated here into `UsageEvent`s and stamped with the
/// daemon's own clock. Visits travel the same way (a `visit` event, and `watching` `location`)
/// and go to the visits driver instead.
final class UsageAgentDoor: Sendable {
    static let maximumEventsPerRequest = 32
    /// Events a connection may send in a burst, and per second after it.
    static let burst: Double = 120
    static let perSecond: Double = 10
    /// Agent connections at once (one per session is what runs).
    static let maximumAgents = 8

    private let sink = Mutex<(any UsageAgentSink)?>(nil)
    private let visitSink = Mutex<(any VisitAgentSink)?>(nil)
    private let agents = Mutex<[Int: Agent]>([:])

    struct Agent {
        let uid: UInt32
        var tokens: Double
        var refilled: Int64
        var watching: Set<UsageObservation> = []
        var watchingLocation = false
    }

    /// Where one event goes.
    enum Routed: Equatable {
        case usage(UsageEvent)
        case visit(VisitEvent)
    }

    /// The source name with which an agent says it watches location.
    static let locationSource = "location"

    func attach(_ sink: any UsageAgentSink) { self.sink.withLock { $0 = sink } }

    func attach(visits sink: any VisitAgentSink) { visitSink.withLock { $0 = sink } }

    /// `agent`: nil when the connection is an agent session now, else why not.
    func open(connection: Int, uid: UInt32, now: Int64) -> WireError? {
        guard let sink = sink.withLock({ $0 }) else {
            return WireError(.unsupportedSensor, "deviceUsageReport is not recorded by this daemon ([device-usage] enabled = no)")
        }
        guard let active = sink.activeUser, active == uid else {
            return WireError(.notPermitted, "uid \(uid) does not hold seat0's active local session")
        }
        return agents.withLock { agents in
            guard agents[connection] != nil || agents.count < Self.maximumAgents else {
                return WireError(.tooManyRequests, "\(Self.maximumAgents) agent sessions are open")
            }
            agents[connection] = Agent(uid: uid, tokens: Self.burst, refilled: now)
            return nil
        }
    }

    /// `usage`: nil when the events were taken, else why not.
    func usage(connection: Int, events: [WireUsageEvent], now: Int64) -> WireError? {
        guard let sink = sink.withLock({ $0 }) else { return WireError(.notPermitted, "no agent session") }
        guard !events.isEmpty, events.count <= Self.maximumEventsPerRequest else {
            return WireError(.malformedRequest, "usage carries 1 to \(Self.maximumEventsPerRequest) events")
        }
        let translated = events.map { Self.route($0, at: now) }
        guard translated.allSatisfy({ $0 != nil }) else {
            return WireError(.malformedRequest, "an event lacks a field its kind needs or holds a value out of range")
        }
        let visitSink = visitSink.withLock { $0 }
        if visitSink == nil, translated.contains(where: { if case .visit? = $0 { true } else { false } }) {
            return WireError(.unsupportedSensor, "visits are not recorded by this daemon ([visits] enabled = no)")
        }
        let admitted: Result<[Routed], WireError> = agents.withLock { agents in
            guard var agent = agents[connection] else { return .failure(WireError(.notPermitted, "send agent first")) }
            guard sink.activeUser == agent.uid else {
                agents[connection] = nil
                return .failure(WireError(.notPermitted, "uid \(agent.uid) no longer holds seat0's active local session"))
            }
            let elapsed = Double(max(0, now.subtractingSaturating(agent.refilled))) / 1e9
            agent.tokens = min(Self.burst, agent.tokens + elapsed * Self.perSecond)
            agent.refilled = now
            guard agent.tokens >= Double(events.count) else {
                agents[connection] = agent
                return .failure(WireError(.tooManyRequests, "more than \(Int(Self.perSecond)) usage events a second"))
            }
            agent.tokens -= Double(events.count)
            for case .usage(.watching(let source, let on, _))? in translated {
                if on { agent.watching.insert(source) } else { agent.watching.remove(source) }
            }
            // Only a change is passed on, so each agent counts once among the location watchers.
            var routed: [Routed] = []
            for event in translated {
                if case .visit(.watching(let on, _))? = event {
                    guard on != agent.watchingLocation else { continue }
                    agent.watchingLocation = on
                }
                routed.append(event!)
            }
            agents[connection] = agent
            return .success(routed)
        }
        switch admitted {
        case .failure(let error): return error
        case .success(let routed):
            for event in routed {
                switch event {
                case .usage(let usage): sink.feed(usage)
                case .visit(let visit): visitSink?.feed(visit)
                }
            }
        }
        return nil
    }

    /// The connection ended: what its agent watched is watched no more.
    func close(connection: Int, now: Int64) {
        guard let agent = agents.withLock({ $0.removeValue(forKey: connection) }), let sink = sink.withLock({ $0 }) else {
            return
        }
        for source in agent.watching { sink.feed(.watching(source, false, at: now)) }
        if agent.watchingLocation { visitSink.withLock { $0 }?.feed(.watching(false, at: now)) }
    }

    static func route(_ event: WireUsageEvent, at now: Int64) -> Routed? {
        switch event.kind {
        case .visit:
            return visit(event, at: now).map { .visit($0) }
        case .watching where event.source == locationSource:
            return event.on.map { .visit(.watching($0, at: now)) }
        default:
            return translate(event, at: now).map { .usage($0) }
        }
    }

    /// A `visit` event: every field there and plausible (`HandedVisit`), nothing else a kind of usage holds.
    static func visit(_ event: WireUsageEvent, at now: Int64) -> VisitEvent? {
        guard event.app == nil, event.event == nil, event.on == nil, event.source == nil, let distance = event.distance,
            let ages = event.ages, let raw = event.category, let category = SRVisit.LocationCategory(rawValue: raw),
            let text = event.place, text.utf8.count == 36, let identifier = UUID(uuidString: text),
            let visit = HandedVisit(distance: distance, ages: ages, category: category, identifier: identifier)
        else { return nil }
        return .visit(visit, at: now)
    }

    /// The sources an agent may speak for: not logind's, which the daemon watches itself.
    static let agentSources: [String: UsageObservation] = [
        UsageObservation.compositor.name: .compositor, UsageObservation.screenSaver.name: .screenSaver,
    ]

    static func translate(_ event: WireUsageEvent, at now: Int64) -> UsageEvent? {
        let source = event.source.flatMap { agentSources[$0] }
        let app = event.app.map { id in
            UsageApp(id: id, category: event.category.map(DeviceUsageFamily.categoryKey) ?? .miscellaneous)
        }
        switch event.kind {
        case .watching:
            guard let source, let on = event.on else { return nil }
            return .watching(source, on, at: now)
        case .screen:
            guard let source, let on = event.on else { return nil }
            return .screen(on: on, at: now, from: source)
        case .locked:
            guard let source, let on = event.on else { return nil }
            return .locked(on, at: now, from: source)
        case .foreground:
            return .foreground(app: app, at: now)
        case .notification:
            guard let raw = event.event, let kind = SRDeviceUsageReport.NotificationUsage.Event(rawValue: raw) else { return nil }
            return .notification(app: app ?? UsageApp(id: nil, category: .miscellaneous), event: kind, at: now)
        case .textInput:
            return .textInput(at: now)
        case .visit:
            return nil
        }
    }
}

extension DeviceUsageFamily {
    static func categoryKey(_ index: Int) -> SRDeviceUsageReport.CategoryKey { categoryKey(Double(index)) }
}
