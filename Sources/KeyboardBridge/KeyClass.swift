/// What a key is to the typing metrics. The reading thread turns each evdev key code into one of
/// these at once and forgets the code: a class, an action and a time are all that ever leave it
/// (docs/keyboard.md, "Privacy").
public enum KeyClass: Hashable, Sendable {
    /// A letter or a digit: part of a word.
    case character
    /// Ends a word that has characters: space, tab, enter and the punctuation that separates words.
    case separator
    /// Backspace and delete.
    case delete
    /// Shift, control, alt, meta, caps lock: typed with other keys, never a tap of its own.
    case modifier
    /// Everything else a keyboard has (arrows, function keys, media keys, punctuation inside words).
    case other

    /// The class of a Linux input event code (`linux/input-event-codes.h`, `EV_KEY` codes).
    public init(evdevCode code: UInt16) {
        switch code {
        case 2...11, 16...25, 30...38, 44...50, 71...73, 75...77, 79...82: self = .character  // digits, letters, keypad digits
        case 15, 28, 51, 52, 53, 57, 39, 96: self = .separator  // tab, enter, comma, dot, slash, space, semicolon, keypad enter
        case 14, 111: self = .delete  // backspace, delete
        case 29, 42, 54, 56, 58, 97, 100, 125, 126: self = .modifier  // ctrl, shift, alt, caps lock, meta (left and right)
        default: self = .other
        }
    }
}

/// What happened to a key (`EV_KEY` values 0, 1, 2).
public enum KeyAction: Hashable, Sendable {
    case release, press
    /// The kernel's autorepeat of a held key.
    case autorepeat

    public init?(evdevValue value: Int32) {
        switch value {
        case 0: self = .release
        case 1: self = .press
        case 2: self = .autorepeat
        default: return nil
        }
    }
}
