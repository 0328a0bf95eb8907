// Escaping text for XML and HTML output (JUnit reports, the HTML report, SVG).
#pragma once

#include <string>

namespace powercut {

// Replaces & < > " ' with entities, and control characters other than \n and \t (not allowed in
// XML 1.0) with '?'. The result is safe in element content and in quoted attribute values.
std::string XmlEscape(const std::string& text);

}  // namespace powercut
