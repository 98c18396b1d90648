"""Cinder v3: volumes (each becomes a loop device of the lab VM whose
server boots with it), created ``available`` at once."""
from __future__ import annotations

from kubernetes_mgmt_lab.cloud.api import (
    ApiError,
    Call,
    Reply,
    filtered,
    new_id,
    not_found,
    now,
    route,
)
from kubernetes_mgmt_lab.cloud.records import Records

MAX_VERSION = '3.70'


def version_doc(base: str) -> dict:
    return {'id': 'v3.0', 'status': 'CURRENT', 'version': MAX_VERSION,
            'min_version': '3.0', 'updated': '2023-03-01T00:00:00Z',
            'links': [{'rel': 'self', 'href': f'{base}/volume/v3/'}],
            'media-types': [{'base': 'application/json',
                             'type': 'application/vnd.openstack.volume+json;'
                                     'version=3'}]}


class Volume:
    """Handlers of the block-storage API."""

    def __init__(self, records: Records, project_id: str,
                 user_id: str = 'lab'):
        self.records = records
        self.project_id, self.user_id = project_id, user_id

    def routes(self):
        return [
            route('GET', '', self.versions),
            route('GET', '/v3', self.version),
            route('GET', '/v3/{project}/volumes', self.list_volumes),
            route('GET', '/v3/{project}/volumes/detail', self.list_volumes),
            route('POST', '/v3/{project}/volumes', self.create),
            route('GET', '/v3/{project}/volumes/{id}', self.show),
            route('PUT', '/v3/{project}/volumes/{id}', self.update),
            route('DELETE', '/v3/{project}/volumes/{id}', self.delete),
            route('GET', '/v3/{project}/types', self.types),
        ]

    def versions(self, call: Call) -> Reply:
        return Reply(300, {'versions': [version_doc(call.base_url)]})

    def version(self, call: Call) -> Reply:
        return Reply(body={'versions': [version_doc(call.base_url)]})

    def types(self, call: Call) -> Reply:
        return Reply(body={'volume_types': [
            {'id': 'lab-loop', 'name': 'lab-loop', 'is_public': True,
             'extra_specs': {}, 'description': 'loop devices'}]})

    def create(self, call: Call) -> Reply:
        body = call.member('volume')
        try:
            size = int(body.get('size'))
        except (TypeError, ValueError):
            size = 0
        if size < 1:
            raise ApiError(400, 'badRequest',
                           'Invalid input received: size must be an '
                           'integer greater than 0.')
        if body.get('imageRef') or body.get('snapshot_id') or \
                body.get('source_volid') or body.get('backup_id'):
            raise ApiError(400, 'badRequest',
                           'the lab makes empty volumes only')
        volume_id = new_id()
        volume = {
            'id': volume_id, 'name': body.get('name'), 'size': size,
            'status': 'available', 'attachments': [],
            'availability_zone': body.get('availability_zone') or 'nova',
            'bootable': 'false', 'encrypted': False, 'multiattach': False,
            'created_at': now(), 'updated_at': now(),
            'description': body.get('description'),
            'volume_type': body.get('volume_type') or 'lab-loop',
            'snapshot_id': None, 'source_volid': None,
            'metadata': body.get('metadata') or {},
            'user_id': self.user_id,
            'os-vol-tenant-attr:tenant_id': self.project_id,
            'replication_status': None, 'migration_status': None,
            'consistencygroup_id': None, 'group_id': None,
            'links': [{'rel': 'self', 'href':
                       f'{call.base_url}/volume/v3/{self.project_id}/'
                       f'volumes/{volume_id}'}]}
        with self.records.changing() as data:
            data['volumes'][volume_id] = volume
        return Reply(202, {'volume': volume})

    def _get(self, ident: str) -> dict:
        volume = self.records.get('volumes', ident)
        if volume is None:
            raise not_found('Volume', ident)
        return volume

    def show(self, call: Call) -> Reply:
        return Reply(body={'volume': self._get(call.args['id'])})

    def list_volumes(self, call: Call) -> Reply:
        return Reply(body={'volumes': filtered(
            self.records.all('volumes'), call, ('name', 'status'))})

    def update(self, call: Call) -> Reply:
        body = call.member('volume')
        with self.records.changing() as data:
            volume = data['volumes'].get(call.args['id'])
            if volume is None:
                raise not_found('Volume', call.args['id'])
            volume.update({k: body[k] for k in ('name', 'description',
                                                'metadata') if k in body})
            volume['updated_at'] = now()
            return Reply(body={'volume': dict(volume)})

    def delete(self, call: Call) -> Reply:
        with self.records.changing() as data:
            volume = data['volumes'].get(call.args['id'])
            if volume is None:
                raise not_found('Volume', call.args['id'])
            if volume['status'] not in ('available', 'error'):
                raise ApiError(400, 'badRequest',
                               f'Invalid volume: Volume status must be '
                               f'available or error, but current status '
                               f'is: {volume["status"]}.')
            del data['volumes'][call.args['id']]
        return Reply(202)
