// The session registry's decisions without I/O: which sessions are open, opening, closing and leased, and
// what closes to make room.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace agentctx::server {

enum class slot_phase
{
    opening,  ///< its store is being opened and loaded; requests for it join that one open
    open,     ///< usable
    closing,  ///< closed, waiting for its descriptors to be released; then it is forgotten
};

/// What the book keeps of one session; the registry's slot type derives from it.
struct slot_record
{
    slot_phase phase = slot_phase::opening;
    std::size_t busy = 0;         ///< leases: requests, automatic checks, event streams
    std::uint64_t last_used = 0;  ///< the book's tick when its last lease ended
};

/**
 * The open sessions by id, with their leases and phases, at most `limit` of them (0 = no limit).
 * Not thread-safe: the registry calls it under its mutex. A session is idle when it is open and
 * nothing leases it; to make room the least recently used idle one is closed. A caller that finds
 * a session opening joins that open (one open per session, however many requests wait for it).
 * Slots are shared: a lease keeps its slot even after the book forgot it (a failed open).
 */
template <class Slot>
class session_book
{
public:
    enum class found_kind
    {
        absent,   ///< not in the book: open it (after making room)
        open,     ///< leased to the caller
        opening,  ///< leased to the caller, who waits for the open to finish
        closing,  ///< wait for its release, then look again
    };
    struct found
    {
        found_kind kind = found_kind::absent;
        std::shared_ptr<Slot> slot;
    };

    enum class room_kind
    {
        available,  ///< one more session may be opened now
        wait,       ///< wait for `wait_for`'s release (after closing `close`, when set), then ask again
        full,       ///< every open session is leased
    };
    struct room
    {
        room_kind kind = room_kind::available;
        std::shared_ptr<Slot> close;     ///< marked closing: the caller closes its session
        std::shared_ptr<Slot> wait_for;  ///< a closing slot
    };

    explicit session_book(std::size_t limit) : limit_(limit) {}

    /// Looks `id` up; an open or opening slot is leased to the caller.
    found lookup(std::string_view id)
    {
        const auto it = slots_.find(id);
        if (it == slots_.end())
            return {};
        const auto& slot = it->second;
        if (slot->phase == slot_phase::closing)
            return {found_kind::closing, slot};
        take(*slot);
        return {slot->phase == slot_phase::open ? found_kind::open : found_kind::opening, slot};
    }

    /// Room for one more session: under the limit it is available; at it the least recently used
    /// idle slot is marked closing (the caller closes it and waits for its release); with none
    /// idle, a slot already closing is waited for; else the book is full.
    room make_room()
    {
        if (limit_ == 0 || slots_.size() < limit_)
            return {};
        std::shared_ptr<Slot> victim, closing;
        for (const auto& [id, slot] : slots_)
        {
            if (slot->phase == slot_phase::closing)
                closing = slot;
            else if (idle(*slot) && (!victim || slot->last_used < victim->last_used))
                victim = slot;
        }
        if (victim)
        {
            victim->phase = slot_phase::closing;
            return {room_kind::wait, victim, victim};
        }
        if (closing)
            return {room_kind::wait, nullptr, closing};
        return {room_kind::full, nullptr, nullptr};
    }

    /// Registers `slot` as `id`'s opening slot, leased to the caller.
    void begin_open(const std::string& id, const std::shared_ptr<Slot>& slot)
    {
        slot->phase = slot_phase::opening;
        slots_.insert_or_assign(id, slot);
        take(*slot);
    }

    void opened(Slot& slot) { slot.phase = slot_phase::open; }

    /// Forgets `id` if `slot` is still its slot (a failed open, or a closed one released).
    void forget(std::string_view id, const Slot& slot)
    {
        if (const auto it = slots_.find(id); it != slots_.end() && it->second.get() == &slot)
            slots_.erase(it);
    }

    void take(Slot& slot) { ++slot.busy; }

    void end_lease(Slot& slot)
    {
        --slot.busy;
        slot.last_used = ++tick_;
    }

    /// Marks up to `n` idle slots closing, least recently used first, and returns them.
    std::vector<std::shared_ptr<Slot>> shed(std::size_t n)
    {
        std::vector<std::shared_ptr<Slot>> idle_slots;
        for (const auto& [id, slot] : slots_)
            if (idle(*slot))
                idle_slots.push_back(slot);
        std::sort(idle_slots.begin(), idle_slots.end(), [](const auto& a, const auto& b) {
            return a->last_used < b->last_used;
        });
        idle_slots.resize(std::min(n, idle_slots.size()));
        for (const auto& slot : idle_slots)
            slot->phase = slot_phase::closing;
        return idle_slots;
    }

    /// Sessions open now (not opening, not closing).
    std::size_t active() const
    {
        return static_cast<std::size_t>(std::count_if(slots_.begin(), slots_.end(), [](const auto& kv) {
            return kv.second->phase == slot_phase::open;
        }));
    }

    std::size_t size() const { return slots_.size(); }

    /// Every slot, in id order (the server's stop closes them all).
    template <class F>
    void for_each(F&& f) const
    {
        for (const auto& [id, slot] : slots_)
            f(id, slot);
    }

private:
    static bool idle(const Slot& s) { return s.phase == slot_phase::open && s.busy == 0; }

    std::size_t limit_;
    std::uint64_t tick_ = 0;
    std::map<std::string, std::shared_ptr<Slot>, std::less<>> slots_;
};

}  // namespace agentctx::server
