// The session registry's decisions without I/O: LRU eviction, leases, joining an open, closing slots.
#include "session_book.hpp"

#include <gtest/gtest.h>

namespace {

using agentctx::server::slot_phase;
using agentctx::server::slot_record;
using book_type = agentctx::server::session_book<slot_record>;
using found_kind = book_type::found_kind;
using room_kind = book_type::room_kind;

// Opens `id` the way the registry does: registered opening (leased), then open, then the lease ends.
std::shared_ptr<slot_record> open_idle(book_type& book, const std::string& id)
{
    auto slot = std::make_shared<slot_record>();
    book.begin_open(id, slot);
    book.opened(*slot);
    book.end_lease(*slot);
    return slot;
}

TEST(session_book, at_the_limit_the_least_recently_used_idle_session_is_closed)
{
    book_type book(2);
    auto a = open_idle(book, "a");
    auto b = open_idle(book, "b");
    EXPECT_EQ(book.active(), 2u);
    // a is used again: b is now the least recently used.
    ASSERT_EQ(book.lookup("a").kind, found_kind::open);
    book.end_lease(*a);
    const auto room = book.make_room();
    ASSERT_EQ(room.kind, room_kind::wait);
    EXPECT_EQ(room.close, b);
    EXPECT_EQ(room.wait_for, b);
    EXPECT_EQ(b->phase, slot_phase::closing);
    EXPECT_EQ(book.lookup("b").kind, found_kind::closing);  // its requests wait for the release
    EXPECT_EQ(book.active(), 1u);
    book.forget("b", *b);  // released
    EXPECT_EQ(book.make_room().kind, room_kind::available);
}

TEST(session_book, leased_sessions_are_never_closed_and_a_full_book_says_so)
{
    book_type book(2);
    auto a = open_idle(book, "a");
    auto b = open_idle(book, "b");
    ASSERT_EQ(book.lookup("a").kind, found_kind::open);  // a request holds a
    auto room = book.make_room();
    ASSERT_EQ(room.kind, room_kind::wait);
    EXPECT_EQ(room.close, b);  // though a is older
    // b is closing: with nothing idle, the next caller waits for b's release.
    room = book.make_room();
    ASSERT_EQ(room.kind, room_kind::wait);
    EXPECT_EQ(room.close, nullptr);
    EXPECT_EQ(room.wait_for, b);
    book.forget("b", *b);
    auto c = std::make_shared<slot_record>();
    book.begin_open("c", c);  // leased by its opener
    EXPECT_EQ(book.make_room().kind, room_kind::full);
    book.end_lease(*a);
    EXPECT_EQ(book.make_room().close, a);
}

TEST(session_book, requests_for_an_opening_session_join_its_one_open)
{
    book_type book(0);
    auto a = std::make_shared<slot_record>();
    book.begin_open("a", a);
    const auto joined = book.lookup("a");
    EXPECT_EQ(joined.kind, found_kind::opening);
    EXPECT_EQ(joined.slot, a);
    EXPECT_EQ(a->busy, 2u);
    EXPECT_EQ(book.active(), 0u);  // not open yet
    book.opened(*a);
    EXPECT_EQ(book.lookup("a").kind, found_kind::open);
    EXPECT_EQ(a->busy, 3u);
    EXPECT_EQ(book.lookup("b").kind, found_kind::absent);
    EXPECT_EQ(book.make_room().kind, room_kind::available);  // no limit
}

TEST(session_book, a_failed_or_released_slot_is_forgotten_only_while_it_is_the_ids_slot)
{
    book_type book(1);
    auto failed = std::make_shared<slot_record>();
    book.begin_open("a", failed);
    ASSERT_EQ(book.lookup("a").kind, found_kind::opening);  // a second request joined
    book.forget("a", *failed);                              // the open failed
    EXPECT_EQ(book.size(), 0u);
    auto again = open_idle(book, "a");  // the next request opens again
    book.forget("a", *failed);          // a late release of the old slot: nothing happens
    EXPECT_EQ(book.size(), 1u);
    book.end_lease(*failed);  // the joined lease ends on its own slot
    book.end_lease(*failed);
    EXPECT_EQ(again->busy, 0u);
    EXPECT_EQ(book.make_room().close, again);
}

TEST(session_book, shedding_closes_idle_sessions_least_recently_used_first)
{
    book_type book(0);
    auto a = open_idle(book, "a");
    auto b = open_idle(book, "b");
    auto c = open_idle(book, "c");
    auto d = open_idle(book, "d");
    ASSERT_EQ(book.lookup("a").kind, found_kind::open);
    book.end_lease(*a);                                  // a: most recent
    ASSERT_EQ(book.lookup("b").kind, found_kind::open);  // b: busy
    const auto shed = book.shed(2);
    ASSERT_EQ(shed.size(), 2u);
    EXPECT_EQ(shed[0], c);
    EXPECT_EQ(shed[1], d);
    EXPECT_EQ(book.shed(5), std::vector<std::shared_ptr<slot_record>>{a});  // b is busy, c and d closing
    EXPECT_EQ(book.active(), 1u);
}

}  // namespace
