"""What Tacker 16 expects of a package's user data class.

v1 (the OpenStack infra driver, ``tacker.vnfm``): ``instantiate`` is
called on the class with four positional arguments at instantiation and
at a whole-VNF heal; ``heal`` and ``scale``, when the class has them, with
seven at a VNFC heal and when a scale-out is undone.

v2 (``tacker.sol_refactored``): a child process imports the class and
calls the method named after the operation (``_rollback`` appended when
rolling back) with five positional arguments. Tacker's v2
``AbstractUserData`` declares them all abstract; its ``StandardUserData``
and ``DefaultUserData`` implement them.

The argument names are Tacker's, for messages: it passes them by position.
"""
from __future__ import annotations

from dataclasses import dataclass

_V1_MODULE = 'tacker.vnfm.lcm_user_data.abstract_user_data'
_V2_PACKAGE = 'tacker.sol_refactored.infra_drivers.openstack'


@dataclass(frozen=True)
class Call:
    method: str
    args: tuple[str, ...]       # passed by position, in this order
    required: bool = True       # False: called only if the class has it


@dataclass(frozen=True)
class Base:
    qualified: str
    api: str                    # 'v1' or 'v2'
    declares: frozenset[str]    # abstract: calling it fails
    implements: frozenset[str]

    @property
    def name(self) -> str:
        return self.qualified.rsplit('.', 1)[1]


_V1_UPDATE = ('base_hot_dict', 'vnfd_dict')
V1_CALLS = (
    Call('instantiate', ('base_hot_dict', 'vnfd_dict', 'inst_req_info',
                         'grant_info')),
    Call('heal', (*_V1_UPDATE, 'heal_vnf_request', 'vnf_instance',
                  'inst_vnf_info', 'param', 'vnfc_resource_info'), False),
    Call('scale', (*_V1_UPDATE, 'scale_vnf_request', 'vnf_instance',
                   'inst_vnf_info', 'param', 'res_num'), False),
)
_V2_ARGS = ('req', 'inst', 'grant_req', 'grant', 'tmp_csar_dir')
_V2_METHODS = ('instantiate', 'scale', 'scale_rollback', 'change_ext_conn',
               'change_ext_conn_rollback', 'heal', 'change_vnfpkg',
               'change_vnfpkg_rollback')
V2_CALLS = tuple(Call(m, _V2_ARGS) for m in _V2_METHODS)

_V2_ALL = frozenset(_V2_METHODS)
BASES = {base.qualified: base for base in (
    Base(f'{_V1_MODULE}.AbstractUserData', 'v1',
         frozenset({'instantiate'}), frozenset()),
    Base(f'{_V2_PACKAGE}.userdata_utils.AbstractUserData', 'v2',
         _V2_ALL, frozenset()),
    Base(f'{_V2_PACKAGE}.userdata_standard.StandardUserData', 'v2',
         frozenset(), _V2_ALL),
    Base(f'{_V2_PACKAGE}.userdata_default.DefaultUserData', 'v2',
         frozenset(), _V2_ALL),
)}


def calls(api: str) -> tuple[Call, ...]:
    return V2_CALLS if api == 'v2' else V1_CALLS


def expected_bases(api: str) -> str:
    """The bases a class of ``api`` may derive from, for messages."""
    return ' or '.join(b.qualified for b in BASES.values() if b.api == api)
