// One Asio initiation for every async_x member: forwards to a non-template `x_impl(args..., handler)`.
#pragma once

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>

#include <utility>

namespace agentctx::detail {

/**
 * @brief `async_initiate` over a member function that takes its arguments and then an
 * `any_completion_handler<Signature>`: the template stays in the header, the work in a .cpp.
 *
 * `object` is what keeps the callee alive while the operation is initiated: `this`, or a
 * `shared_ptr` when the operation must keep it alive until completion (the impl's own business).
 * The arguments are decay-copied by Asio, so deferred tokens may launch the operation later.
 */
template <class Signature, class CompletionToken, class Object, class Member, class... Args>
auto async_call(CompletionToken&& token, Object object, Member member, Args&&... args)
{
    return boost::asio::async_initiate<CompletionToken, Signature>(
        [object = std::move(object), member](auto handler, auto&&... a) {
            ((*object).*member
            )(std::forward<decltype(a)>(a)...,
              boost::asio::any_completion_handler<Signature>(std::move(handler)));
        },
        token,
        std::forward<Args>(args)...
    );
}

}  // namespace agentctx::detail
